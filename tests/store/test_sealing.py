"""Evidence that cannot be changed unnoticed: strict sealing of finished trials, the run digest,
damaged files named with exit 3, and a hand-edited manifest never resumed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.run import RunOptions, start_run
from assay.score import score_run
from assay.store.integrity import run_digest, verify_run
from assay.store.rundir import LEDGER, RunDir
from tests.conftest import write_suite, write_task, run_assay

TRIAL = "calc.base.nop.r1"


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("sealing")
    s = write_suite(base / "suite")
    write_task(s, "calc", task={"category": "code", "predicates": [
        {"id": "plus", "kind": "file_contains", "path": "calc.py", "text": "a + b"}]},
        workspace={"calc.py": "def add(a, b):\n    return a - b\n"}, solution="sed -i 's/a - b/a + b/' calc.py\n")
    start_run(RunOptions(suite=s, agents=["oracle", "nop"], out=base / "run", sandbox="host"))
    return base / "run"


@pytest.fixture
def run_dir(finished_run: Path, tmp_path: Path) -> Path:
    """A private copy of one finished run (each test tampers with its own)."""
    shutil.copytree(finished_run, tmp_path / "run")
    return tmp_path / "run"


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


def test_lines_appended_to_a_finished_trace_fail_verify_and_scoring(run_dir: Path) -> None:
    before = score_run(run_dir)
    trace = run_dir / "trials" / TRIAL / "trace.jsonl"
    last = json.loads(trace.read_text().splitlines()[-1])
    forged = {**last, "seq": last["seq"] + 1, "kind": "tool_call", "data": {"name": "shell", "arguments": {}}}
    with open(trace, "a") as f:
        f.write(json.dumps(forged) + "\n")
    problems = verify_run(run_dir).problems
    assert any(f"{TRIAL}/trace.jsonl: modified" in p for p in problems), problems
    proc = assay("verify", str(run_dir))
    assert proc.returncode == 3 and "trace.jsonl" in proc.stdout
    with pytest.raises(IntegrityError, match="trace.jsonl"):
        score_run(run_dir)
    for cmd in (["score", str(run_dir)], ["report", str(run_dir)], ["compare", str(run_dir), str(run_dir)]):
        proc = assay(*cmd)
        assert proc.returncode == 3, (cmd, proc.stdout, proc.stderr)
        assert "trace.jsonl" in proc.stderr and "Traceback" not in proc.stderr
    assert before.trials  # the untouched run scored


def test_trace_may_grow_only_while_an_attempt_is_in_flight(run_dir: Path) -> None:
    rd = RunDir(run_dir)
    trace = rd.trace_path(TRIAL)
    rd.mark_started(TRIAL, 2, {"retry_reason": "test"})  # sealed marker: attempt 2 is live
    with open(trace, "a") as f:
        f.write('{"seq": 99}\n')
    assert verify_run(run_dir).ok
    (rd.attempt_dir(TRIAL, 2) / "started.json").unlink()
    assert not verify_run(run_dir).ok  # the trial is finished again: the growth is a change


def test_hand_made_started_marker_does_not_unlock_a_finished_trace(run_dir: Path) -> None:
    rd = RunDir(run_dir)
    marker = rd.attempt_dir(TRIAL, 2) / "started.json"
    marker.parent.mkdir(parents=True)
    marker.write_text('{"ts": 1}')
    with open(rd.trace_path(TRIAL), "a") as f:
        f.write('{"seq": 99}\n')
    problems = verify_run(run_dir).problems
    assert any("attempts/2/started.json: file not in the ledger" in p for p in problems)
    assert any("trace.jsonl: modified" in p for p in problems)


def test_every_file_of_a_finished_trial_is_sealed(run_dir: Path) -> None:
    sealed = RunDir(run_dir).ledger()
    for p in (run_dir / "trials").rglob("*"):
        if p.is_file():
            assert p.relative_to(run_dir).as_posix() in sealed, p
    (run_dir / "trials" / TRIAL / "attempts" / "1" / "note.txt").write_text("added later")
    assert any("note.txt: file not in the ledger" in p for p in verify_run(run_dir).problems)


def test_run_digest_printed_and_expected(run_dir: Path) -> None:
    proc = assay("verify", str(run_dir))
    m = re.search(r"run digest: (sha256:[0-9a-f]{64})", proc.stdout)
    assert proc.returncode == 0 and m and m.group(1) == run_digest(run_dir)
    assert assay("verify", str(run_dir), "--expect", m.group(1)).returncode == 0
    assert assay("verify", str(run_dir), "--expect", m.group(1).removeprefix("sha256:")).returncode == 0
    bad = assay("verify", str(run_dir), "--expect", "sha256:" + "0" * 64)
    assert bad.returncode == 3 and "run digest" in bad.stdout


def test_file_rewritten_with_its_ledger_line_is_caught_by_the_run_digest(run_dir: Path) -> None:
    digest = run_digest(run_dir)
    res = run_dir / "trials" / TRIAL / "attempts" / "1" / "result.json"
    data = json.loads(res.read_text())
    data["end_state"] = "pass"
    new = (json.dumps(data, indent=2) + "\n").encode()
    res.write_bytes(new)
    import hashlib

    ledger = run_dir / LEDGER
    lines = [json.loads(x) for x in ledger.read_text().splitlines()]
    for rec in lines:
        if rec["path"].endswith(f"{TRIAL}/attempts/1/result.json"):
            rec["sha256"] = hashlib.sha256(new).hexdigest()
    ledger.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in lines))
    assert verify_run(run_dir).ok  # the ledger alone is fooled...
    proc = assay("verify", str(run_dir), "--expect", digest)
    assert proc.returncode == 3 and "expected" in proc.stdout  # ...the recorded run digest is not


def test_truncated_result_is_exit_3_naming_the_file(run_dir: Path) -> None:
    res = run_dir / "trials" / TRIAL / "attempts" / "1" / "result.json"
    res.write_bytes(res.read_bytes()[:40])
    for cmd in (["verify", str(run_dir)], ["score", str(run_dir)], ["report", str(run_dir)],
                ["show", str(run_dir)], ["show", str(run_dir), TRIAL]):
        proc = assay(*cmd)
        text = proc.stdout + proc.stderr
        assert proc.returncode == 3, (cmd, text)
        assert "result.json" in text and "Traceback" not in text, (cmd, text)


def test_resume_refuses_a_hand_edited_manifest(run_dir: Path) -> None:
    m = run_dir / "manifest.json"
    data = json.loads(m.read_text())
    data["plan"]["trials"].append("calc.base.nop.r2")
    m.write_text(json.dumps(data, indent=2) + "\n")
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    proc = assay("run", "--resume", str(run_dir))
    assert proc.returncode == 3 and "manifest.json" in proc.stderr and "Traceback" not in proc.stderr
    assert not (run_dir / "trials" / "calc.base.nop.r2").exists()
    after = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*") if p.name != "runner.lock")
    assert after == [p for p in before if p.name != "runner.lock"]


def test_torn_ledger_line_is_fenced_not_extended(run_dir: Path) -> None:
    rd = RunDir(run_dir)
    with open(run_dir / LEDGER, "ab") as f:
        f.write(b'{"path": "trials/x/attempts/1/res')  # a write cut by a full disk or kill -9
    (run_dir / "extra.txt").write_text("x")
    rd.seal("extra.txt")
    assert rd.ledger()["extra.txt"]  # the next line is whole and read
    assert verify_run(run_dir).ok
