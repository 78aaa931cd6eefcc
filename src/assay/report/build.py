"""Build a report (HTML, Markdown or JSON) for a run, optionally compared with another run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from assay.errors import UsageError
from assay.records.comparison import REPORT_SCHEMA, Comparison, ReportDocument
from assay.records.scores import ScoreDocument
from assay.report.heldout import withheld_note, withhold, withhold_comparison, withhold_judges
from assay.score.compare import Threshold, compare_agents, compare_scores
from assay.score.engine import score_run
from assay.spec.judge import JudgeSummary
from assay.store.rundir import REPORTS, RunDir

Format = Literal["html", "md", "json"]
FORMATS = ("html", "md", "json")
#: metrics shown agent against agent: every pair of agents costs one paired bootstrap per metric
#: (about 0.8 s per pair at 1000 shared tasks on a loaded 2-core machine), so only the headline rate
AGENT_METRICS = ("strict_rate",)


def report_document(doc: ScoreDocument, cmp: Comparison | None = None,
                    judges: list[JudgeSummary] | None = None) -> ReportDocument:
    """The stable machine interface: the isolation note first, the score document, the comparison
    with a baseline run, the paired differences between the run's own agents, and its judges."""
    return ReportDocument(isolation=doc.isolation, score=doc, compare=cmp,
                          agents_compared=compare_agents(doc, metrics=AGENT_METRICS), judges=judges or [])


def run_judges(rd: RunDir) -> list[JudgeSummary]:
    """The run's judges; a run without a judge model had none (and its results are not read again)."""
    if rd.manifest().judge is None:
        return []
    from assay.judge.summary import judge_summaries

    return judge_summaries(rd.iter_results())


def report_json(doc: ScoreDocument, cmp: Comparison | None = None) -> dict:
    """The report document as JSON-ready data (``assay.report/1``)."""
    return report_document(doc, cmp).dump()


def build_report(run_dir: Path | str, fmt: str = "html", *, compare: Path | str | None = None,
                 agent_map: dict[str, str] | None = None, allow_suite_change: bool = False) -> str:
    """Score ``run_dir`` (integrity first) and render it; ``compare`` is the baseline run."""
    if fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    rd = RunDir.open(run_dir)
    doc = score_run(rd.path)
    cmp = None
    if compare is not None:
        cmp = compare_scores(score_run(compare), doc, agent_map=agent_map, allow_suite_change=allow_suite_change)
    held = rd.manifest().held_out_ids()
    note = withheld_note(doc, held)
    doc = withhold(doc, held)  # held-out tasks count in the figures; their details and ids are never shown
    report = report_document(doc, withhold_comparison(cmp, held), withhold_judges(run_judges(rd), held))
    if fmt == "json":
        return json.dumps(report.dump(), indent=1) + "\n"
    if fmt == "md":
        from assay.report.markdown import render_markdown

        return render_markdown(doc, report.compare, report.agents_compared, report.judges) + (f"\n{note}\n" if note else "")
    from assay.report.html import render_html

    return render_html(doc, rd, report.compare, report.agents_compared, report.judges, note=note)


def write_report(run_dir: Path | str, fmt: str = "html", *, out: Path | str | None = None,
                 compare: Path | str | None = None, agent_map: dict[str, str] | None = None,
                 allow_suite_change: bool = False) -> Path:
    """Write the report to ``out`` (default ``RUN_DIR/reports/report.<ext>``; reports are derived files)."""
    text = build_report(run_dir, fmt, compare=compare, agent_map=agent_map, allow_suite_change=allow_suite_change)
    target = Path(out) if out is not None else Path(run_dir) / REPORTS / f"report.{fmt}"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


__all__ = ["FORMATS", "REPORT_SCHEMA", "Threshold", "build_report", "report_document", "report_json", "write_report"]
