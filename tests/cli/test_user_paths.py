"""Paths the user gives are refused cleanly (issue 28): a workspace holding a symlink loop (a
regression to `RuntimeError: Symlink loop`), an export or CI output that cannot be written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_assay


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


@pytest.mark.parametrize("command", ["run", "validate"])
def test_a_symlink_loop_in_a_workspace_is_refused_in_one_line(calc_suite: Path, tmp_path: Path, command: str) -> None:
    ws = next((calc_suite / "tasks").iterdir()) / "workspace"
    ws.mkdir(exist_ok=True)
    os.symlink("loop", ws / "loop")
    args = [command, str(calc_suite), "--sandbox", "host"] + (["-a", "nop", "-o", str(tmp_path / "r")] if command == "run" else [])
    r = assay(*args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "loop of links" in r.stderr and str(ws / "loop") in r.stderr
    assert not (tmp_path / "r").exists()


def test_export_to_a_path_that_cannot_be_written_is_exit_2_naming_it(calc_suite: Path, tmp_path: Path) -> None:
    from assay.run import RunOptions, start_run

    run = tmp_path / "run"
    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=run, sandbox="host"))
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    a_dir = tmp_path / "folder"
    a_dir.mkdir()
    for target in (a_dir, a_file / "out.jsonl", a_file / "deeper" / "out.jsonl", Path("/proc/assay-export.jsonl")):
        r = assay("export", str(run), "-o", str(target))
        assert r.returncode == 2, (target, r.stderr)
        assert str(target) in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
        assert not Path(str(target) + ".part").exists()
    made = tmp_path / "new" / "folder" / "rows.jsonl"  # a folder that does not exist yet is made, as for --junit
    assert assay("export", str(run), "-o", str(made)).returncode == 0 and made.read_text()


def test_an_unwritable_junit_path_is_refused_before_any_trial(calc_suite: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    r = assay("run", str(calc_suite), "-a", "nop", "--sandbox", "host", "-o", str(tmp_path / "r"),
              "--junit", str(a_file / "j.xml"))
    assert r.returncode == 2 and "--junit" in r.stderr and not (tmp_path / "r").exists()
