"""``assay show RUN TRIAL --diff`` reads the workspace diff artifact of each attempt."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from assay.run import RunOptions, start_run
from assay.store.rundir import RunDir
from assay.store.workspace_diff import ARTIFACT_NAME, build_workspace_diff, scan
from tests.conftest import write_suite, write_task, run_assay


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


@pytest.fixture
def run_with_diff(tmp_path: Path) -> tuple[Path, str]:
    """A real run, plus one more attempt written through the run directory's own API with a diff."""
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "x", "kind": "file_exists", "path": "x"}]},
               workspace={"calc.py": "def add(a, b):\n    return a - b\n", "gone.txt": "bye\n"})
    run = tmp_path / "run"
    outcome = start_run(RunOptions(suite=s, agents=["nop"], out=run, sandbox="host"))
    (first,) = outcome.results
    before = s / "tasks/t/workspace"
    ws = tmp_path / "ws"
    os.system(f"cp -a {before} {ws}")
    initial = scan(ws)
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "gone.txt").unlink()
    (ws / "evil\x1b[2J.txt").write_text("\x1b]0;owned\x07payload\n")
    rd = RunDir(run)
    digest = rd.put_artifact(build_workspace_diff(ws, initial, before=before))
    rd.mark_started(first.trial_id, 2, {})
    rd.write_result(first.model_copy(update={"attempt": 2, "artifacts": {ARTIFACT_NAME: digest}}))
    return run, first.trial_id


def test_show_diff_lists_changes_and_line_diffs(run_with_diff: tuple[Path, str]) -> None:
    run, trial = run_with_diff
    proc = assay("show", str(run), trial, "--diff")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "attempt 1" in out and "the workspace is unchanged" in out  # the nop attempt of the real run
    assert "attempt 2" in out and "changed" in out and "deleted" in out and "added" in out
    assert "-    return a - b" in out and "+    return a + b" in out
    assert "- bye" in out  # a deleted text file shows what it held
    assert "\x1b" not in out and "\x07" not in out and "evil\\x1b[2J.txt" in out
    only = assay("show", str(run), trial, "--diff", "--attempt", "2")
    assert only.returncode == 0 and "attempt 1" not in only.stdout
    assert assay("verify", str(run)).returncode == 0


def test_damaged_diff_artifact_is_exit_3(run_with_diff: tuple[Path, str]) -> None:
    run, trial = run_with_diff
    res = RunDir(run).result(trial, 2)
    path = RunDir(run).artifact_path(res.artifacts[ARTIFACT_NAME])
    path.write_bytes(path.read_bytes()[:20])
    proc = assay("show", str(run), trial, "--diff")
    assert proc.returncode == 3 and "workspace diff" in proc.stderr and "Traceback" not in proc.stderr


def test_diff_needs_a_trial(run_with_diff: tuple[Path, str]) -> None:
    run, _ = run_with_diff
    proc = assay("show", str(run), "--diff")
    assert proc.returncode == 2 and "--diff" in proc.stderr


def test_real_attempt_keeps_its_diff_and_final_answer(tmp_path: Path) -> None:
    from tests.conftest import write_agent

    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "x", "kind": "file_exists", "path": "made.txt"}]},
               workspace={"calc.py": "def add(a, b):\n    return a - b\n", "gone.txt": "bye\n"})
    agent = write_agent(tmp_path / "edit.yaml", "edit", """
        import os
        open('calc.py', 'w').write('def add(a, b):\\n    return a + b\\n')
        os.remove('gone.txt')
        open('made.txt', 'w').write('made\\n')
        print('I fixed add() and made made.txt')
    """)
    run = tmp_path / "run"
    proc = assay("run", str(s), "--agent", str(agent), "--sandbox", "host", "--out", str(run), "-q")
    assert proc.returncode == 0, proc.stderr
    (r,) = RunDir.open(run).results()
    assert ARTIFACT_NAME in r.artifacts
    answer = RunDir(run).read_artifact(r.artifacts["agent.final_answer"]).decode()
    assert "I fixed add()" in answer
    shown = assay("show", str(run), r.trial_id, "--diff")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "+    return a + b" in out and "made.txt" in out and "gone.txt" in out and "deleted" in out
    full = assay("show", str(run), r.trial_id)
    assert "agent.final_answer" in full.stdout
