"""How the results log is read back: each line's bytes exactly, whatever the order and size of the
reads (LogIndex.read takes a window of the log at once), as the log is after a refresh, and one
index of a run's log shared by the scan and the other readers of the same RunDir."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.report.build import write_report
from assay.run import RunOptions, start_run
from assay.score.engine import score_run
from assay.store import results_log
from assay.store.integrity import verify_run
from assay.store.results_log import LOG, LogIndex, append
from assay.store.rundir import RunDir
from assay.store.scan import RunScan


def _line(k: int, size: int) -> bytes:
    return json.dumps({"trial_id": f"t{k}", "attempt": 1, "pad": "x" * size}).encode() + b"\n"


def _write_log(root: Path, sizes: list[int]) -> list[bytes]:
    lines = [_line(k, s) for k, s in enumerate(sizes)]
    (root / LOG).write_bytes(b"".join(lines))
    return lines


def test_every_line_reads_back_exactly_in_any_order_and_size(tmp_path: Path) -> None:
    rng = random.Random(7)
    sizes = [rng.randint(10, 3000) for _ in range(2500)]  # several windows' worth
    sizes[1200] = 3 << 20  # one line larger than a window
    lines = _write_log(tmp_path, sizes)
    index = LogIndex(tmp_path)
    assert len(index) == len(lines)
    assert [index.read(i) for i in range(len(lines))] == [x[:-1] for x in lines]  # the log's order
    order = list(range(len(lines)))
    rng.shuffle(order)
    assert all(index.read(i) == lines[i][:-1] for i in order)  # any order
    assert all(index.read(i) == lines[i][:-1] for i in reversed(range(len(lines))))
    assert [index.read(i) for i in range(1000, 1400)] == [x[:-1] for x in lines[1000:1400]]  # in order from mid-log
    skipping = list(range(0, len(lines), 3))  # forward, a line in three (near: from windows)
    assert [index.read(i) for i in skipping] == [lines[i][:-1] for i in skipping]
    index.close()
    assert index.read(5) == lines[5][:-1]  # opened again after close


def test_a_refresh_reads_the_log_as_it_is_now(tmp_path: Path) -> None:
    lines = _write_log(tmp_path, [50] * 10)
    index = LogIndex(tmp_path)
    assert index.read(3) == lines[3][:-1]  # the window now holds the whole log
    changed = lines[3].replace(b'"x', b'"y', 1)  # the same size, other bytes
    with open(tmp_path / LOG, "r+b") as f:
        f.seek(sum(map(len, lines[:3])))
        f.write(changed)
        f.seek(0, 2)
        f.write(_line(10, 70))
    index.refresh()
    assert len(index) == 11
    assert index.read(3) == changed[:-1]  # not the window read before the change
    assert index.read(10) == _line(10, 70)[:-1]


def test_a_line_being_written_is_never_read_from_a_stale_window(tmp_path: Path) -> None:
    lines = _write_log(tmp_path, [40] * 4)
    last = _line(4, 40)
    with open(tmp_path / LOG, "ab") as f:
        f.write(last[:20])  # torn: not indexed yet
    index = LogIndex(tmp_path)
    assert len(index) == 4 and index.read(0) == lines[0][:-1]  # the window holds the torn start
    with open(tmp_path / LOG, "ab") as f:
        f.write(last[20:])
    index.refresh()
    assert index.read(4) == last[:-1]


@pytest.fixture
def log_run(calc_suite: Path, tmp_path: Path) -> Path:
    start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], out=tmp_path / "run", sandbox="host",
                         results="log"))
    return tmp_path / "run"


def test_a_report_indexes_the_log_once(log_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Path] = []
    real_init = LogIndex.__init__

    def counting_init(self: LogIndex, root: Path) -> None:
        built.append(root)
        real_init(self, root)

    monkeypatch.setattr(results_log.LogIndex, "__init__", counting_init)
    monkeypatch.setenv("ASSAY_SCAN_WORKERS", "0")  # indexed in this process, where it is counted
    out = write_report(log_run, "html", out=tmp_path / "report.html")
    assert len(built) == 1, built  # the scan's index, read again by the trial sections
    html = out.read_text()
    assert "calc.base.oracle.r1" in html and "attempt 1: pass" in html and "attempt 1: fail" in html


def test_a_scan_reads_a_line_its_shared_index_took_in_since(log_run: Path, tmp_path: Path) -> None:
    """Lines appended while a scan reads (a live run): the shared index takes them in, the scan reads
    them, and each is held to the ledger as it is once the scan ends: one written as the runner
    writes (sealed first) is no problem, one appended without a seal is named."""
    rd = RunDir.open(log_run)
    scan = RunScan(rd)
    log = scan.log()
    assert log is not None and rd.results_log() is log  # one index for the RunDir and its scan
    oracle = rd.result("calc.base.oracle.r1", 1)
    assert oracle is not None
    rd.write_result(oracle.model_copy(update={"trial_id": "calc.base.oracle.r9", "repetition": 9}))
    forged = oracle.model_copy(update={"trial_id": "calc.base.oracle.r8", "repetition": 8})
    append(log_run, forged.model_dump_json().encode())  # no seal: added by hand
    assert len(rd.results_log() or []) == 4  # the shared index grew after the scan sized its marks
    read = dict(scan.read_in_order(["calc.base.oracle.r1", "calc.base.nop.r1", "calc.base.oracle.r9",
                                    "calc.base.oracle.r8"]))
    assert [a.end_state.value for a in read["calc.base.oracle.r9"].attempts] == ["pass"]
    _checked, problems = scan.finish()
    assert [p.split(": ", 2)[2] for p in problems] == [
        "the result of calc.base.oracle.r8 attempt 1 is not in the ledger (added after the run?)"]
    doc = score_run(log_run, verify=False)  # a scan started after the write reads both
    assert "results.jsonl/calc.base.oracle.r9/1" in doc.inputs.results

def test_a_line_changed_after_it_was_indexed_is_held_to_its_seal_as_it_was_parsed(log_run: Path) -> None:
    """The scan parses a line when it reads the trial, after the whole log was indexed. A line
    changed in between (same length, so every offset still holds: nop's ``fail`` made ``pass``)
    is checked as the bytes that were parsed, never as the bytes the index saw: the scan names it
    as modified, and the scorer refuses the forged pass."""
    rd = RunDir.open(log_run)
    scan = RunScan(rd)
    assert scan.log() is not None  # indexed now (before this fix, each line was hashed here too)
    data = (log_run / LOG).read_bytes()
    at = data.index(b'"trial_id":"calc.base.nop.r1"')
    start = data.rindex(b"\n", 0, at) + 1 if b"\n" in data[:at] else 0
    end = data.index(b"\n", at)
    line = data[start:end]
    assert line.count(b'"end_state":"fail"') == 1
    (log_run / LOG).write_bytes(data[:start] + line.replace(b'"end_state":"fail"', b'"end_state":"pass"') + data[end:])
    read = dict(scan.read_in_order(["calc.base.oracle.r1", "calc.base.nop.r1"]))
    nop = read["calc.base.nop.r1"]
    assert nop is not None and [a.end_state.value for a in nop.attempts] == ["pass"]  # what was parsed
    _checked, problems = scan.finish()
    assert [p for p in problems if "calc.base.nop.r1 attempt 1 was modified after it was written" in p], problems
    forged = line.replace(b'"end_state":"fail"', b'"end_state":"pass"')
    assert dict(nop.result_digests)["results.jsonl/calc.base.nop.r1/1"] == hashlib.sha256(forged).hexdigest()
    assert not verify_run(log_run).ok  # and, read again from the start, the same
    with pytest.raises(IntegrityError, match="calc.base.nop.r1 attempt 1 was modified"):
        score_run(log_run)
