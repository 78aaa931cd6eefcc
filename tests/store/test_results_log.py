"""A run with ``--results log`` keeps every result as a line of ``results.jsonl``, sealed in the
ledger like a result file: every reader finds the same results, and `assay verify` (so `score`,
`report`, `export`) names each way the log can be changed after the run. Attack tests: each change
below would otherwise reach the score."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.records.results import AttemptResult
from assay.run import RunOptions, start_run
from assay.score.engine import score_run
from assay.store.integrity import verify_run
from assay.store.results_log import LOG, log_key
from assay.store.rundir import RunDir
from tests.conftest import run_assay


@pytest.fixture
def log_run(calc_suite: Path, tmp_path: Path) -> Path:
    start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], out=tmp_path / "run", sandbox="host",
                         results="log"))
    return tmp_path / "run"


def lines(run: Path) -> list[bytes]:
    return (run / LOG).read_bytes().splitlines(keepends=True)


def line_of(run: Path, trial: str) -> int:
    return next(k for k, line in enumerate(lines(run)) if json.loads(line)["trial_id"] == trial)


def rewrite(run: Path, new: list[bytes]) -> None:
    (run / LOG).write_bytes(b"".join(new))


def test_results_are_lines_of_the_log_and_every_reader_finds_them(log_run: Path) -> None:
    assert not list(log_run.glob("trials/*/attempts/*/result.json"))
    assert len(lines(log_run)) == 2
    assert json.loads((log_run / "manifest.json").read_text())["plan"]["results"] == "log"
    ledger = [json.loads(x) for x in (log_run / "ledger.jsonl").read_text().splitlines()]
    keys = {x["path"] for x in ledger if x["path"].startswith(LOG + "/")}
    assert keys == {log_key("calc.base.oracle.r1", 1), log_key("calc.base.nop.r1", 1)}
    report = verify_run(log_run)
    assert report.ok, report.problems
    rd = RunDir.open(log_run)
    assert rd.attempts_of("calc.base.oracle.r1") == [1]
    assert [r.end_state.value for r in rd.results()] == ["fail", "pass"]  # nop, oracle: sorted by trial
    doc = score_run(log_run)
    assert doc.agents["oracle"].strict_rate == 1.0 and doc.agents["nop"].strict_rate == 0.0
    assert set(doc.inputs.results) == keys
    shown = run_assay("show", str(log_run), "calc.base.oracle.r1")
    assert shown.returncode == 0 and "pass" in shown.stdout


def test_a_result_written_twice_is_refused(log_run: Path) -> None:
    rd = RunDir.open(log_run)
    r = rd.result("calc.base.nop.r1", 1)
    assert r is not None
    with pytest.raises(Exception, match="already has a result"):
        rd.write_result(r)
    assert len(lines(log_run)) == 2


def _forged(line: bytes, **changes: object) -> bytes:
    data = json.loads(line)
    data.update(changes)
    return AttemptResult.model_validate(data).model_dump_json().encode() + b"\n"


def test_an_edited_line_is_named_and_refuses_the_score(log_run: Path) -> None:
    k = line_of(log_run, "calc.base.nop.r1")
    new = lines(log_run)
    new[k] = _forged(new[k], end_state="pass")
    rewrite(log_run, new)
    problems = verify_run(log_run).problems
    assert any("the result of calc.base.nop.r1 attempt 1 was modified after it was written" in p for p in problems)
    with pytest.raises(IntegrityError):
        score_run(log_run)
    proc = run_assay("score", str(log_run))
    assert proc.returncode == 3 and "results.jsonl" in proc.stdout + proc.stderr


def test_a_removed_line_is_named(log_run: Path) -> None:
    new = lines(log_run)
    del new[line_of(log_run, "calc.base.oracle.r1")]
    rewrite(log_run, new)
    assert any("calc.base.oracle.r1 attempt 1 was sealed but has no line in the log" in p
               for p in verify_run(log_run).problems)


def test_a_deleted_log_is_named(log_run: Path) -> None:
    (log_run / LOG).unlink()
    problems = verify_run(log_run).problems
    assert sum("was sealed but has no line in the log" in p for p in problems) == 2


def test_a_repeated_line_is_named_and_the_first_is_read(log_run: Path) -> None:
    new = lines(log_run)
    k = line_of(log_run, "calc.base.nop.r1")
    rewrite(log_run, [*new, _forged(new[k], end_state="pass")])  # appended later, claims the same attempt
    assert any("a second result of calc.base.nop.r1 attempt 1" in p for p in verify_run(log_run).problems)
    result = RunDir.open(log_run).result("calc.base.nop.r1", 1)
    assert result is not None and result.end_state.value == "fail"


def test_an_added_attempt_is_named(log_run: Path) -> None:
    new = lines(log_run)
    k = line_of(log_run, "calc.base.nop.r1")
    rewrite(log_run, [*new, _forged(new[k], attempt=2, end_state="pass")])
    assert any("the result of calc.base.nop.r1 attempt 2 is not in the ledger" in p
               for p in verify_run(log_run).problems)


def test_a_line_that_is_json_but_no_result_is_named(log_run: Path) -> None:
    rewrite(log_run, [*lines(log_run), b'{"end_state": "pass"}\n'])
    assert any("a line that is JSON but no result" in p for p in verify_run(log_run).problems)


def test_a_result_file_added_to_a_log_run_is_named(log_run: Path) -> None:
    line = lines(log_run)[line_of(log_run, "calc.base.nop.r1")]
    extra = log_run / "trials/calc.base.nop.r1/attempts/1/result.json"
    extra.write_bytes(_forged(line, end_state="pass"))
    assert any("attempts/1/result.json: result file not in the ledger" in p for p in verify_run(log_run).problems)


def test_a_log_added_to_a_run_of_result_files_is_named(calc_suite: Path, tmp_path: Path) -> None:
    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=tmp_path / "run", sandbox="host"))
    run = tmp_path / "run"
    src = next(run.glob("trials/*/attempts/1/result.json"))
    (run / LOG).write_bytes(_forged(src.read_bytes(), attempt=2, end_state="pass"))
    assert any("attempt 2 is not in the ledger" in p for p in verify_run(run).problems)


def test_a_torn_last_line_is_fenced_and_the_resume_closes_its_attempt(log_run: Path) -> None:
    """A crash mid-append: the attempt's seal is in the ledger, its line cut short. The run does not
    verify (a sealed result with no line); a resume closes the attempt as interrupted, gives the
    trial a new one, and the next line is written after a newline, never onto the torn bytes."""
    data = (log_run / LOG).read_bytes()
    last = data[:-1].rsplit(b"\n", 1)[-1]
    torn_trial = json.loads(last)["trial_id"]
    (log_run / LOG).write_bytes(data[: len(data) - len(last) // 2])
    assert any(f"{torn_trial} attempt 1 was sealed but has no line" in p for p in verify_run(log_run).problems)
    r = run_assay("run", "--resume", str(log_run), "-q")
    assert r.returncode in (0, 1), r.stderr
    report = verify_run(log_run)
    assert report.ok, report.problems
    rd = RunDir.open(log_run)
    first = rd.result(torn_trial, 1)
    assert first is not None and first.partial and first.reason == "interrupted"
    assert rd.attempts_of(torn_trial) == [1, 2]


def to_log_layout(src: Path, dst: Path) -> None:
    """A copy of a run of result files whose results are lines of the log instead, sealed so."""
    shutil.copytree(src, dst)
    ledger = []
    for raw in (dst / "ledger.jsonl").read_text().splitlines():
        rec = json.loads(raw)
        if rec["path"].endswith("/result.json"):
            path = dst / rec["path"]
            result = AttemptResult.model_validate_json(path.read_bytes())
            data = result.model_dump_json().encode()
            path.unlink()
            with open(dst / LOG, "ab") as f:
                f.write(data + b"\n")
            rec["path"] = log_key(result.trial_id, result.attempt)
            rec["sha256"] = hashlib.sha256(data).hexdigest()
        ledger.append(json.dumps(rec, sort_keys=True))
    (dst / "ledger.jsonl").write_text("\n".join(ledger) + "\n")


def test_the_same_results_score_the_same_in_either_layout(calc_suite: Path, tmp_path: Path) -> None:
    start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], repeat=3, out=tmp_path / "files",
                         sandbox="host"))
    to_log_layout(tmp_path / "files", tmp_path / "log")
    assert verify_run(tmp_path / "log").ok
    a, b = score_run(tmp_path / "files").dump(), score_run(tmp_path / "log").dump()
    for doc in (a, b):
        doc.pop("scored_at")
        doc["inputs"].pop("results")
    assert a == b
    assert b["inputs"]["result_files"] == 6


def test_a_large_log_is_indexed_by_a_child_process_and_reads_the_same(log_run: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The index a child process builds (a large log) is the one this process would build, and a
    child that fails costs only time: the log is indexed here and the checks are the same."""
    import assay.store.log_child as log_child
    from assay.store.log_child import PendingIndex
    from assay.store.results_log import LogIndex

    monkeypatch.setattr(log_child, "CHILD_FROM", 0)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    pending = PendingIndex(log_run)
    assert pending.proc is not None
    there, here = pending.result(), LogIndex(log_run)
    for tid in ("calc.base.oracle.r1", "calc.base.nop.r1"):
        assert [(there.attempt(i), there.offset(i), there.read(i)) for i in there.entries(tid)] == \
               [(here.attempt(i), here.offset(i), here.read(i)) for i in here.entries(tid)]
    assert verify_run(log_run).ok
    monkeypatch.setattr(log_child.sys, "executable", "/nonexistent/python")
    assert PendingIndex(log_run).proc is None  # cannot start: indexed here
    new = lines(log_run)
    k = line_of(log_run, "calc.base.nop.r1")
    new[k] = _forged(new[k], end_state="pass")
    rewrite(log_run, new)
    assert any("was modified after it was written" in p for p in verify_run(log_run).problems)


def test_the_cli_takes_results_log_and_refuses_anything_else(calc_suite: Path, tmp_path: Path) -> None:
    bad = run_assay("run", str(calc_suite), "-a", "nop", "--sandbox", "host", "--results", "sqlite", "-o",
                    str(tmp_path / "bad"))
    assert bad.returncode == 2 and "--results must be files or log" in bad.stderr and not (tmp_path / "bad").exists()
    ok = run_assay("run", str(calc_suite), "-a", "nop", "--sandbox", "host", "--results", "log", "-q", "-o",
                   str(tmp_path / "run"))
    assert ok.returncode in (0, 1), ok.stderr
    assert len(lines(tmp_path / "run")) == 1 and verify_run(tmp_path / "run").ok
    again = run_assay("run", "--resume", str(tmp_path / "run"), "--results", "files")
    assert again.returncode == 2 and "where results go" in again.stderr


def test_a_log_that_is_a_link_is_named_and_never_read(log_run: Path, tmp_path: Path) -> None:
    """The log replaced by a link to a forged copy elsewhere: never followed (as a link in a trial
    folder is never followed), named, and the forged results reach no reader."""
    new = lines(log_run)
    k = line_of(log_run, "calc.base.nop.r1")
    new[k] = _forged(new[k], end_state="pass")
    forged = tmp_path / "elsewhere.jsonl"
    forged.write_bytes(b"".join(new))
    (log_run / LOG).unlink()
    (log_run / LOG).symlink_to(forged)
    problems = verify_run(log_run).problems
    assert any("results.jsonl: a link, not a regular file" in p for p in problems), problems
    assert RunDir.open(log_run).result("calc.base.nop.r1", 1) is None
    with pytest.raises(IntegrityError):
        score_run(log_run)


def test_a_log_that_is_a_fifo_never_hangs_a_reader(log_run: Path) -> None:
    import os

    (log_run / LOG).unlink()
    os.mkfifo(log_run / LOG)
    problems = verify_run(log_run).problems  # would block forever on open() of a FIFO
    assert any("results.jsonl: a FIFO, not a regular file" in p or "results.jsonl: a special file" in p
               for p in problems), problems
    assert RunDir.open(log_run).attempts_of("calc.base.nop.r1") == [1]  # its started marker's folder only
