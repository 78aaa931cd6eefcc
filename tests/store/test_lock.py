"""One runner per run directory: a second runner is refused at once and the first is unaffected;
a killed runner's lock is gone with it; its scratch is removed by the next runner."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.errors import RunDirError
from assay.store.integrity import verify_run
from assay.store.lock import RunLock
from assay.store.rundir import RunDir
from assay.store.scratch import make_scratch, remove_scratch, scratch_root
from tests.conftest import assay_env, cli_timeout, write_agent, write_suite, write_task


def started_markers(run_dir: Path) -> list[Path]:
    return list(run_dir.glob("trials/*/attempts/*/started.json")) if run_dir.exists() else []


def wait_for(cond, proc: subprocess.Popen | None, what: str) -> None:
    deadline = time.monotonic() + 120
    while not cond():
        if proc is not None:
            assert proc.poll() is None, f"runner ended before {what}: {proc.stderr.read().decode() if proc.stderr else ''}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def blocking_run(tmp_path: Path):
    """A run whose agent holds its attempt open until the test creates ``release``."""
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": 120},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    release = tmp_path / "release"
    running = tmp_path / "running"
    agent = write_agent(tmp_path / "held.yaml", "held", f"""
        import os, time
        open({str(running)!r}, "w").close()
        while not os.path.exists({str(release)!r}):
            time.sleep(0.05)
        open('out.txt', 'w').write('done')
    """)
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", str(agent), "--sandbox",
                             "host", "--out", str(run_dir), "-q"], env=assay_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_for(lambda: started_markers(run_dir) and running.exists(), proc, "the first agent to run")
        yield proc, run_dir, release
    finally:
        release.touch()
        if proc.poll() is None:
            proc.wait(timeout=cli_timeout())


def test_second_runner_refused_first_unaffected(blocking_run) -> None:
    proc, run_dir, release = blocking_run
    second = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", "--resume", str(run_dir), "-q"],
                            capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert second.returncode == 2, second.stdout + second.stderr
    assert "another assay runner" in second.stderr and f"pid {proc.pid}" in second.stderr
    assert "Traceback" not in second.stderr
    release.touch()
    assert proc.wait(timeout=cli_timeout()) == 0, proc.stderr.read().decode()
    results = RunDir.open(run_dir).results()
    assert [(r.trial_id, r.attempt, r.end_state.value, r.partial) for r in results] == [("f.base.held.r1", 1, "pass", False)]
    assert verify_run(run_dir).ok


def test_killed_runner_leaves_no_lock_and_resume_closes_its_attempt(blocking_run) -> None:
    proc, run_dir, release = blocking_run
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    release.touch()
    left = scratch_root(run_dir)
    assert any(left.glob("*/1/workspace")), "the killed runner left its attempt's scratch behind"
    # the agent outlives its killed runner (its own session); let it finish before its scratch goes
    wait_for(lambda: any(left.glob("*/1/workspace/out.txt")), None, "the orphaned agent to finish")
    resumed = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", "--resume", str(run_dir), "-q"],
                             capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert resumed.returncode == 0, resumed.stderr
    states = [(r.attempt, r.end_state.value, r.reason) for r in RunDir.open(run_dir).results()]
    assert states == [(1, "infra_error", "interrupted"), (2, "pass", None)]
    assert verify_run(run_dir).ok
    assert not left.exists()  # the stopped runner's scratch was removed by the next runner


def test_library_resume_refused_while_a_runner_is_live(blocking_run) -> None:
    from assay.run import resume_run

    _, run_dir, _ = blocking_run
    with pytest.raises(RunDirError, match="another assay runner"):
        resume_run(run_dir)


def test_lock_refuses_other_process_and_is_released(tmp_path: Path) -> None:
    code = ("import sys; from assay.store.lock import RunLock\n"
            "try:\n    RunLock(sys.argv[1]).acquire()\nexcept Exception as e:\n    print(type(e).__name__, e); sys.exit(2)\n")
    with RunLock(tmp_path) as lock:
        assert lock.held
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=assay_env())
        assert other.returncode == 2 and "RunDirError" in other.stdout and f"pid {os.getpid()}" in other.stdout
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=assay_env())
    assert other.returncode == 0, other.stdout


def test_a_lock_a_killed_runners_child_still_holds_is_waited_for(tmp_path: Path) -> None:
    """A runner killed while a process it forked had not yet exec'd leaves that child holding the
    inherited lock for a moment. A resume right after waits for it (the runner that took the lock
    is dead), where a live runner's lock is refused at once (the test above)."""
    code = ("import os, sys, time; from assay.store.lock import RunLock\n"
            "RunLock(sys.argv[1]).acquire()\n"
            "r, w = os.pipe()\n"
            "if os.fork() == 0:\n"
            "    os.close(r); os.write(w, b'x'); time.sleep(2.5); os._exit(0)\n"  # the orphan holds the lock 2.5 s
            "os.close(w); os.read(r, 1); os._exit(0)\n")  # the runner that took it ends once its child has it
    assert subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=assay_env()).returncode == 0
    fd = os.open(tmp_path / "runner.lock", os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):  # held still, by the orphan
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    with RunLock(tmp_path) as lock:  # waited for, not refused
        assert lock.held


def test_lock_is_not_evidence(tmp_path: Path, calc_suite: Path) -> None:
    from assay.run import RunOptions, start_run

    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=tmp_path / "run", sandbox="host"))
    with RunLock(tmp_path / "run"):
        assert verify_run(tmp_path / "run").ok
    with pytest.raises(RunDirError):
        with RunLock(tmp_path / "run"):
            RunLock(tmp_path / "run").acquire()  # a second holder, even in the same process


def test_scratch_of_an_interrupted_runner_is_removed(tmp_path: Path) -> None:
    root = scratch_root(tmp_path / "run")
    remove_scratch(tmp_path / "run")
    made = make_scratch(tmp_path / "run")
    assert made == root and oct(made.stat().st_mode & 0o777) == "0o700"
    left = made / "t.base.a.r1" / "1" / "workspace"
    left.mkdir(parents=True)
    (left / "big.bin").write_bytes(b"x" * 1000)
    locked = left / "ro"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0o500)  # a sandbox may leave folders we cannot write
    again = make_scratch(tmp_path / "run")  # the next runner, holding the lock
    assert again == root and list(again.iterdir()) == []
    assert remove_scratch(tmp_path / "run") and not root.exists()


def test_planted_scratch_link_is_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    root = scratch_root(tmp_path / "run")
    remove_scratch(tmp_path / "run")
    os.symlink(victim, root)
    made = make_scratch(tmp_path / "run")
    assert not made.is_symlink() and (victim / "keep.txt").read_text() == "keep"
    remove_scratch(tmp_path / "run")


def test_started_marker_is_sealed(tmp_path: Path, calc_suite: Path) -> None:
    from assay.run import RunOptions, start_run

    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=tmp_path / "run", sandbox="host"))
    ledger = [json.loads(x)["path"] for x in (tmp_path / "run/ledger.jsonl").read_text().splitlines()]
    assert "trials/calc.base.nop.r1/attempts/1/started.json" in ledger
