"""`assay show` in an 80-column terminal: every trial id stays distinguishable (the shared prefix
is said once and elided, the rest folds, never cut to `approv…`) and a trial's predicate evidence
is shown in full lines, not squeezed into a 16-character column."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from assay.cli.render import show_run, show_trial
from assay.records.results import PredicateResult
from tests.score.synth import attempt, write_run

TASKS = ("approval-refund-small", "approval-refund-large", "approval-refund-partial", "approval-rename-vendor")


def _console(width: int) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, force_terminal=True, color_system=None), buf


def _first_column(out: str, title: str) -> list[str]:
    """The first column of the table titled ``title``, one string per row (folded lines joined)."""
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if title in ln)
    header = next(i for i in range(start, len(lines)) if "state" in lines[i])
    end_col = lines[header].index("state")
    rows: list[str] = []
    for ln in lines[header + 2:]:
        if not ln.strip():
            break
        cell = ln[:end_col].strip()
        if ln[end_col:].strip():  # a row's first line carries the other columns too
            rows.append(cell)
        elif rows:
            rows[-1] += cell
    return rows


def test_trial_ids_stay_distinguishable_at_80_columns(tmp_path: Path) -> None:
    rs = [attempt(t, "code", "openclaw-2026.11", rep, "pass" if rep % 2 else "timeout") for t in TASKS for rep in (1, 2, 3)]
    rd = write_run(tmp_path / "r", {"code": 1}, rs)
    console, buf = _console(80)
    show_run(console, rd)
    out = buf.getvalue()
    assert max(len(ln) for ln in out.splitlines()) <= 80
    assert "ids: approval-" in out  # the shared prefix, said once
    rows = _first_column(out, "trials")
    ids = sorted(r.trial_id for r in rs)
    assert rows == ["…" + i[len("approval-"):] for i in ids]  # every id whole after the prefix: all distinct
    # a wide console (or a log) shows the full ids, nothing elided
    console, buf = _console(200)
    show_run(console, rd)
    assert "ids:" not in buf.getvalue() and all(i in buf.getvalue() for i in ids)


def test_one_trial_view_shows_evidence_in_full_lines_at_80_columns(tmp_path: Path) -> None:
    evidence = {"path": "reports/2026/november/refunds.csv", "expected": "total=1234.56", "got": "total=1200.00",
                "diff": "line 17: 1234.56 != 1200.00"}
    pred = PredicateResult(id="totals", kind="file_contains", required=True, weight=1, passed=False, evidence=evidence)
    rd = write_run(tmp_path / "r", {"code": 1}, [attempt("approval-refund-small", "code", "a", 1, "fail", predicates=[pred])])
    console, buf = _console(80)
    assert show_trial(console, rd, rs_id := rd.results()[0].trial_id)
    out = buf.getvalue()
    assert rs_id in out and max(len(ln) for ln in out.splitlines()) <= 80
    text = out[out.index("evidence totals:"):]
    flat = "".join(ln.strip() for ln in text.splitlines()[:6])
    assert json.dumps(evidence, ensure_ascii=False).replace(" ", "") in flat.replace(" ", "")
