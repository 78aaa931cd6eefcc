"""A large export writes its rows in a process of its own beside the scan
(report/export_child.py): the same bytes as written in the exporting process, in both formats it
streams and both result layouts, held-out ids withheld; a changed run is refused, a child that
dies fails the export, one that cannot start costs only time, and nothing is left under the name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import assay.report.export_child as export_child
import assay.store.framed_child as framed_child
from assay.errors import IntegrityError
from assay.report.export import ExportOptions, export_run
from assay.store.rundir import RunDir
from tests.heldout_run import held_out_run
from tests.score.synth import attempt, trial_id, write_run


def _run(path: Path, results: str) -> Path:
    rs = [attempt("t1", "code", "a", 1, "infra_error", attempt=1, retryable=True, reason="sandbox", cost=0.5),
          attempt("t1", "code", "a", 1, "pass", attempt=2, cost=0.25),
          attempt("t2", "code", "a", 1, "fail", incidents=[{"type": "secret_leak", "severity": "high"}]),
          attempt("t3", "ops", "a", 1, "skipped", reason="unsupported"),
          attempt("t1", "code", "b", 1, "pass")]
    rd = write_run(path / "files", {"code": 1, "ops": 1}, [], planned_extra=[
        *dict.fromkeys(r.trial_id for r in rs), trial_id("t4", "base", "b", 1)])
    if results == "log":
        m = rd.manifest()
        rd = RunDir.create(path / "log", m.model_copy(update={"plan": m.plan.model_copy(update={"results": "log"})}))
    for r in rs:
        rd.write_result(r)
    return rd.path


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every export of a run of any size writes its rows in a child (as on two cores at 10^4+ trials)."""
    monkeypatch.setattr(export_child, "EXPORT_CHILD_FROM", 1)
    monkeypatch.setattr(export_child, "usable_cores", lambda: 2)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    argvs: list[list[str]] = []
    real = subprocess.Popen

    def popen(argv: list[str], **kw: Any) -> Any:
        argvs.append(list(argv))
        return real(argv, **kw)

    monkeypatch.setattr(framed_child.subprocess, "Popen", popen)
    return argvs


def _here(run: Path, fmt: str, out: Path, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as m:
        m.setattr(export_child, "EXPORT_CHILD_FROM", 1 << 62)
        export_run(run, ExportOptions(fmt=fmt, out=out))
    return out.read_bytes()


@pytest.mark.parametrize("results", ["files", "log"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_childs_rows_are_the_rows_written_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    spawned: list[list[str]], fmt: str, results: str) -> None:
    run = _run(tmp_path, results)
    want = _here(run, fmt, tmp_path / f"here.{fmt}", monkeypatch)
    assert not spawned
    out = tmp_path / f"child.{fmt}"
    export_run(run, ExportOptions(fmt=fmt, out=out))
    assert [a[1:3] for a in spawned] == [["-m", "assay.report.export_child"]]
    assert out.read_bytes() == want
    assert not out.with_name(out.name + ".part").exists()
    if fmt == "jsonl":
        rows = [json.loads(line) for line in want.splitlines()]
        assert len(rows) == 6 and rows[-1]["reason"] == "missing"  # every attempt, and the trial with none


def test_held_out_ids_are_withheld_by_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                spawned: list[list[str]]) -> None:
    run = held_out_run(tmp_path / "ho")
    want = _here(run, "jsonl", tmp_path / "here.jsonl", monkeypatch)
    out = tmp_path / "child.jsonl"
    export_run(run, ExportOptions(fmt="jsonl", out=out))
    assert spawned and out.read_bytes() == want
    assert b"held1" not in want and b"open1" in want


def test_a_changed_run_is_refused_and_nothing_is_left(tmp_path: Path, spawned: list[list[str]]) -> None:
    run = _run(tmp_path, "log")
    log = run / "results.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"end_state":"fail"', b'"end_state":"pass"', 1))
    out = tmp_path / "rows.jsonl"
    with pytest.raises(IntegrityError, match="refusing to export"):
        export_run(run, ExportOptions(fmt="jsonl", out=out))
    assert spawned  # the rows were being written by the child when the scan's problems refused them
    assert not out.exists() and not out.with_name(out.name + ".part").exists()


def test_a_child_that_dies_fails_the_export_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               spawned: list[list[str]]) -> None:
    run = _run(tmp_path, "files")
    real = subprocess.Popen

    def dying(argv: list[str], **kw: Any) -> Any:
        return real([sys.executable, "-c", "import sys; sys.stdin.buffer.read(8); sys.exit(5)"], **kw)

    monkeypatch.setattr(framed_child.subprocess, "Popen", dying)
    out = tmp_path / "rows.jsonl"
    with pytest.raises(RuntimeError, match="exit code 5"):
        export_run(run, ExportOptions(fmt="jsonl", out=out))
    assert not out.exists() and not out.with_name(out.name + ".part").exists()


def test_a_child_that_cannot_start_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   spawned: list[list[str]]) -> None:
    run = _run(tmp_path, "log")
    want = _here(run, "csv", tmp_path / "here.csv", monkeypatch)

    def cannot(argv: list[str], **kw: Any) -> Any:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(framed_child.subprocess, "Popen", cannot)
    out = tmp_path / "rows.csv"
    export_run(run, ExportOptions(fmt="csv", out=out))
    assert out.read_bytes() == want


def test_which_exports_write_in_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(export_child, "usable_cores", lambda: 2)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    big = export_child.EXPORT_CHILD_FROM
    assert export_child.export_in_child(big, 0, "jsonl") and export_child.export_in_child(big, 0, "csv")
    assert not export_child.export_in_child(big - 1, 0, "jsonl")  # small: a child costs more than it saves
    assert not export_child.export_in_child(big, 2, "jsonl")  # the scan's readers already use every core
    assert not export_child.export_in_child(big, 0, "parquet")  # its table is built whole
    monkeypatch.setenv("ASSAY_SCAN_WORKERS", "0")
    assert not export_child.export_in_child(big, 0, "jsonl")
    monkeypatch.delenv("ASSAY_SCAN_WORKERS")
    monkeypatch.setattr(export_child, "usable_cores", lambda: 1)
    assert not export_child.export_in_child(big, 0, "jsonl")
