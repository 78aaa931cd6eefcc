"""The host a manifest records: the machine's CPUs and the ones the run may use, which differ
when the run is pinned (taskset, a container's cpuset) and which its wall times depend on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from assay.run.manifest_builder import host_facts

PINNED = """
import json, os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
from assay.run.manifest_builder import host_facts
print(json.dumps(host_facts()))
"""


def test_the_cpus_a_run_may_use_are_recorded_beside_the_machines() -> None:
    facts = host_facts()
    assert facts["cpus"] == os.cpu_count() and facts["cpus_usable"] == len(os.sched_getaffinity(0))


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this system")
def test_a_run_pinned_to_one_cpu_says_so() -> None:
    out = subprocess.run([sys.executable, "-c", PINNED], capture_output=True, text=True, check=True)
    facts = json.loads(out.stdout)
    assert facts["cpus_usable"] == 1 and facts["cpus"] == os.cpu_count()
