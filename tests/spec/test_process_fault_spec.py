"""Process fault plans that could never fire are refused when the task loads (bad input: the
file, the variant and the fix named; the CLI exits 2)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import assay_env, cli_timeout

SUITE = Path(__file__).resolve().parents[2] / "examples" / "recovery"


def _suite(tmp_path: Path, task: str, edit) -> Path:
    s = tmp_path / "s"
    shutil.copytree(SUITE, s)
    p = s / "tasks" / task / "task.yaml"
    data = yaml.safe_load(p.read_text())
    edit(data)
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return s


def _validate(suite: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", "validate", str(suite)], capture_output=True,
                          text=True, env=assay_env(), timeout=cli_timeout())


@pytest.mark.parametrize(("task", "drop", "says"), [
    ("approve-entry", "approvals", "a late_approval fault needs `approvals:`"),
    ("book-entry", "worlds", "process_faults are triggered by world tool calls"),
])
def test_a_plan_that_cannot_fire_is_refused(tmp_path: Path, task: str, drop: str, says: str) -> None:
    def edit(d: dict) -> None:
        d.pop(drop)
        if drop == "worlds":
            d.pop("behaviour")
            d["predicates"] = [{"id": "f", "kind": "file_exists", "path": "x"}]

    p = _validate(_suite(tmp_path, task, edit))
    assert p.returncode == 2, p.stdout + p.stderr
    assert says in p.stderr and f"tasks/{task}/task.yaml" in p.stderr and "Traceback" not in p.stderr


def test_unknown_process_fault_kind_is_refused(tmp_path: Path) -> None:
    def edit(d: dict) -> None:
        d["variants"].append({"id": "fault-x", "process_faults": [{"kind": "reboot_host"}]})

    p = _validate(_suite(tmp_path, "book-entry", edit))
    assert p.returncode == 2 and "process_faults" in p.stderr and "fix: use one of: 'agent_killed'" in p.stderr
    assert "Traceback" not in p.stderr
