"""Black-box tests of the real CLI: exit codes, output and the files written."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import write_suite, write_task, run_assay


def assay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return run_assay(*args, cwd=cwd)


def test_run_prints_table_and_run_dir_then_show(calc_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = assay("run", str(calc_suite), "--agent", "oracle,nop", "--sandbox", "host", "--out", str(out), "-n", "2")
    assert proc.returncode == 0, proc.stderr
    assert f"run directory: {out}" in proc.stdout
    assert "oracle" in proc.stdout and "100% (2/2)" in proc.stdout and "0% (0/2)" in proc.stdout
    assert "UNSANDBOXED" in proc.stdout
    assert "trials" in proc.stderr and "4/4" in proc.stderr  # the live progress bar
    shown = assay("show", str(out))
    assert shown.returncode == 0 and "calc.base.oracle.r2" in shown.stdout
    trial = assay("show", str(out), "calc.base.nop.r1")
    assert trial.returncode == 0
    assert "tests" in trial.stdout and "assert -1 == 5" in trial.stdout  # predicate evidence
    assert "attempt_started" in trial.stdout  # trace events
    missing = assay("show", str(out), "nope")
    assert missing.returncode == 2 and "no trial 'nope'" in missing.stderr


def test_validate_ok(calc_suite: Path) -> None:
    proc = assay("validate", str(calc_suite), "--sandbox", "host")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all 1 task variant(s) valid" in proc.stdout


def test_validate_names_task_whose_verifier_passes_untouched_state(calc_suite: Path) -> None:
    write_task(calc_suite, "lazy", task={"category": "code", "predicates": [
        {"id": "calc-present", "kind": "file_exists", "path": "calc.py"}]},
        workspace={"calc.py": "x = 1\n"}, solution="true\n")
    write_task(calc_suite, "broken-oracle", task={"category": "code", "predicates": [
        {"id": "made", "kind": "file_exists", "path": "made.txt"}]}, solution="echo oops > other.txt\n")
    proc = assay("validate", str(calc_suite), "--sandbox", "host")
    assert proc.returncode == 1
    assert "INVALID task lazy" in proc.stdout and "calc-present" in proc.stdout and "nop passes" in proc.stdout
    assert "INVALID task broken-oracle" in proc.stdout and "oracle fails predicate 'made'" in proc.stdout
    assert "INVALID task calc" not in proc.stdout


def test_validate_task_without_solution_is_invalid(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "nosol", task={"category": "code", "predicates": [{"id": "x", "kind": "file_exists", "path": "x"}]})
    proc = assay("validate", str(s), "--sandbox", "host")
    assert proc.returncode == 1 and "no_reference_solution" in proc.stdout


def test_resume_and_arguments_errors(calc_suite: Path, tmp_path: Path) -> None:
    proc = assay("run", "--resume", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and "not a run directory" in proc.stderr and "Traceback" not in proc.stderr
    proc = assay("run", str(calc_suite))
    assert proc.returncode == 2 and "--agent" in proc.stderr
    proc = assay("run", str(calc_suite), "--agent", "nop", "--sandbox", "nosuch")
    assert proc.returncode == 2 and "unknown sandbox backend 'nosuch'" in proc.stderr


def test_help_lists_commands() -> None:
    proc = assay("--help")
    assert proc.returncode == 0
    for cmd in ("run", "validate", "show", "schema", "verify", "index"):
        assert cmd in proc.stdout
