"""Conformance with SWE-bench's own verdict on the shipped fixture: assay's oracle and do-nothing
verdicts equal what SWE-bench's way says when run by hand over the same repository tree (the
gold patch applied first, or not): ``git apply`` the test patch, ``pytest -rA`` the test files,
read the ``PASSED``/``FAILED`` lines as its ``parse_log_pytest`` does, resolved when every
FAIL_TO_PASS and PASS_TO_PASS test passed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from assay.importers import import_suite
from assay.records.results import EndState
from assay.run.validate import validate_suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "swe-bench"
TID = "pytest-dev__iniconfig-c689ba7"
STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL")


def by_hand(scratch: Path, *, gold: bool) -> bool:
    """SWE-bench's verdict, its way, on a fresh copy of the repository at base_commit."""
    task = FIXTURE / "task-repo" / "tasks" / TID
    repo = scratch / "testbed"
    shutil.copytree(next((FIXTURE / "repos").glob("pytest-dev__iniconfig@*")), repo)
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(scratch), "PYTHONPATH": str(repo / "src"),
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for patch in (["gold.patch"] if gold else []) + ["test.patch"]:
        subprocess.run(["git", "apply", str(task / patch)], cwd=repo, env=env, check=True)
    tests = json.loads((task / "tests.json").read_text())
    files = sorted({i.split("::", 1)[0] for i in tests["FAIL_TO_PASS"] + tests["PASS_TO_PASS"]})
    log = subprocess.run([sys.executable, "-m", "pytest", "-rA", "-p", "no:cacheprovider", *files], cwd=repo,
                         env=env, capture_output=True, text=True, timeout=300).stdout
    status = {}
    for line in log.splitlines():
        word, _, rest = line.partition(" ")
        if word in STATUSES:
            status[rest.split(" - ", 1)[0].strip()] = word
    return all(status.get(i) == "PASSED" for i in tests["FAIL_TO_PASS"] + tests["PASS_TO_PASS"])


def test_assays_verdicts_equal_swe_benchs_own(tmp_path: Path) -> None:
    out = tmp_path / "suite"
    import_suite("swe-bench", FIXTURE / "task-repo", out)
    [v] = validate_suite(out).verdicts
    assert v.oracle is not None and v.nop is not None
    peer_oracle, peer_nop = by_hand(tmp_path / "oracle", gold=True), by_hand(tmp_path / "nop", gold=False)
    assert (v.oracle.end_state is EndState.passed) == peer_oracle is True
    assert (v.nop.end_state is EndState.passed) == peer_nop is False
