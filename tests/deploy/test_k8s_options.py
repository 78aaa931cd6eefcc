"""`assay k8s render` refuses what Kubernetes would refuse, before it prints anything: ports, CIDRs,
DNS-1123 names and namespaces, resource quantities (issue 28)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from assay.deploy.k8s import RenderOptions, render
from assay.errors import UsageError
from tests.conftest import assay_env, cli_timeout

BASE = RenderOptions(suite="/suites/starter", agents=("reference",))


@pytest.mark.parametrize("field, value, option", [
    ("upstream_port", 70000, "--upstream-port"),
    ("upstream_port", 0, "--upstream-port"),
    ("upstream_cidr", "10.0.0.0/33", "--upstream-cidr"),
    ("upstream_cidr", "not-a-cidr", "--upstream-cidr"),
    ("upstream_cidr", "10.0.0.1/8", "--upstream-cidr"),  # host bits set: Kubernetes refuses it too
    ("namespace", "Assay_Eval", "--namespace"),
    ("namespace", "a" * 64, "--namespace"),
    ("name", "-campaign", "--name"),
    ("worker_memory", "lots", "--worker-memory"),
    ("head_memory", "8 Gi", "--head-memory"),
    ("worker_cpu", "two", "--worker-cpu"),
    ("runs_storage", "0Gi", "--runs-storage"),
])
def test_a_value_kubernetes_would_refuse_is_a_usage_error_naming_the_option(field: str, value: object,
                                                                             option: str) -> None:
    with pytest.raises(UsageError) as e:
        render(dataclasses.replace(BASE, **{field: value}))
    assert option in str(e.value) and "fix" in str(e.value) and repr(value)[:20].strip("'") in str(e.value)


@pytest.mark.parametrize("field, value", [("worker_cpu", "500m"), ("worker_memory", "1.5Gi"), ("head_memory", "512Mi"),
                                          ("upstream_cidr", "203.0.113.0/24"), ("upstream_cidr", "2001:db8::/32"),
                                          ("namespace", "eval-2"), ("runs_storage", "100G"), ("worker_cpu", "1e3")])
def test_values_kubernetes_accepts_still_render(field: str, value: object) -> None:
    assert render(dataclasses.replace(BASE, **{field: value}))


def test_cli_prints_nothing_for_a_bad_port() -> None:
    p = subprocess.run([sys.executable, "-m", "assay.cli.main", "k8s", "render", "--suite", "/s", "--agent", "nop",
                        "--upstream-port", "70000", "--worker-memory", "lots"],
                       capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert p.returncode == 2 and not p.stdout and "Traceback" not in p.stderr
    assert "--upstream-port 70000" in p.stderr and "--worker-memory 'lots'" in p.stderr
