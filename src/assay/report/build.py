"""Build a report (HTML, Markdown or JSON) for a run, optionally compared with another run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from assay.errors import UsageError
from assay.score.compare import Threshold, compare_scores
from assay.score.engine import score_run
from assay.store.rundir import REPORTS, RunDir

REPORT_SCHEMA = "assay.report/1"
Format = Literal["html", "md", "json"]
FORMATS = ("html", "md", "json")


def report_json(doc: dict[str, Any], cmp: dict[str, Any] | None = None) -> dict[str, Any]:
    """The stable machine interface: the isolation note first, then the score document and the comparison."""
    return {"isolation": doc["isolation"], "schema": REPORT_SCHEMA, "score": doc, "compare": cmp}


def build_report(run_dir: Path | str, fmt: str = "html", *, compare: Path | str | None = None,
                 agent_map: dict[str, str] | None = None) -> str:
    """Score ``run_dir`` (integrity first) and render it; ``compare`` is the baseline run."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    rd = RunDir.open(run_dir)
    doc = score_run(rd.path)
    cmp = None
    if compare is not None:
        cmp = compare_scores(score_run(compare), doc, agent_map=agent_map)
    if fmt == "json":
        return json.dumps(report_json(doc, cmp), indent=1) + "\n"
    if fmt == "md":
        from assay.report.markdown import render_markdown

        return render_markdown(doc, cmp)
    from assay.report.html import render_html

    return render_html(doc, rd, cmp)


def write_report(run_dir: Path | str, fmt: str = "html", *, out: Path | str | None = None,
                 compare: Path | str | None = None, agent_map: dict[str, str] | None = None) -> Path:
    """Write the report to ``out`` (default ``RUN_DIR/reports/report.<ext>``; reports are derived files)."""
    text = build_report(run_dir, fmt, compare=compare, agent_map=agent_map)
    target = Path(out) if out is not None else Path(run_dir) / REPORTS / f"report.{fmt}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


__all__ = ["FORMATS", "REPORT_SCHEMA", "Threshold", "build_report", "report_json", "write_report"]
