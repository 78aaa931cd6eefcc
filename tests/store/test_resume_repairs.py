"""Resume, kill and interrupt never leave a run that lies (issue 28): a torn last ledger line is
repaired when it proves its seal, else the resume is refused naming ledger.jsonl and the line; a
no-op resume leaves runner.lock alone; a killed write's .tmp- file is removed and said."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from assay.run import RunOptions, start_run
from assay.store.integrity import verify_run
from tests.conftest import assay_env, cli_timeout


def resume(run_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", "run", "--resume", str(run_dir), "-q"],
                          capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())


def finished_run(calc_suite: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=out, sandbox="host"))
    return out


def last_line(run_dir: Path) -> bytes:
    return (run_dir / "ledger.jsonl").read_bytes()[:-1].rsplit(b"\n", 1)[1]


def cut_last_line(run_dir: Path, keep: int) -> None:
    """Cut the ledger's last line after ``keep`` bytes (a crash mid-write)."""
    p = run_dir / "ledger.jsonl"
    head, last = p.read_bytes()[:-1].rsplit(b"\n", 1)
    p.write_bytes(head + b"\n" + last[:keep])


def test_a_torn_line_that_proves_its_seal_is_repaired_and_said(calc_suite: Path, tmp_path: Path) -> None:
    run = finished_run(calc_suite, tmp_path)
    last = last_line(run)
    cut_last_line(run, keep=last.index(b'"ts"'))  # the path and the whole digest survive
    assert not verify_run(run).ok  # the result it sealed now looks added by hand
    r = resume(run)
    assert r.returncode == 0, r.stderr
    assert "ledger.jsonl: line" in r.stderr and "repaired" in r.stderr
    assert verify_run(run).ok


def test_a_torn_line_that_cannot_prove_its_seal_refuses_the_resume(calc_suite: Path, tmp_path: Path) -> None:
    run = finished_run(calc_suite, tmp_path)
    last = last_line(run)
    cut_last_line(run, keep=last.index(b'"sha256"') + 20)  # cut inside the digest
    before = (run / "ledger.jsonl").read_bytes()
    r = resume(run)
    assert r.returncode == 3, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "ledger.jsonl: line" in lines[0] and "resume refused" in lines[0]
    assert "run " not in r.stdout  # no summary that looks like a finished run
    assert (run / "ledger.jsonl").read_bytes() == before


def test_a_noop_resume_does_not_rewrite_the_run_lock(calc_suite: Path, tmp_path: Path) -> None:
    run = finished_run(calc_suite, tmp_path)
    lock = run / "runner.lock"
    before = (lock.read_bytes(), lock.stat().st_mtime_ns)
    r = resume(run)
    assert r.returncode == 0, r.stderr
    assert (lock.read_bytes(), lock.stat().st_mtime_ns) == before


def test_a_killed_writes_temp_file_is_removed_and_said(calc_suite: Path, tmp_path: Path) -> None:
    run = finished_run(calc_suite, tmp_path)
    attempt = next((run / "trials").glob("*/attempts/1"))
    (attempt / ".tmp-abc123").write_bytes(b'{"ts": 1')  # what a kill -9 inside write_exclusive leaves
    r = resume(run)
    assert r.returncode == 0, r.stderr
    assert "removed 1 temporary file" in r.stderr and ".tmp-abc123" in r.stderr
    assert not (attempt / ".tmp-abc123").exists() and verify_run(run).ok
