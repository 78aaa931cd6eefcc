"""Scoring commands: score, report, compare. They parse arguments and call assay.score / assay.report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.errors import UsageError


def _agent_map(pairs: list[str]) -> dict[str, str] | None:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise UsageError(f"--pair {p!r}: expected BASELINE_AGENT=CANDIDATE_AGENT")
        a, b = p.split("=", 1)
        out[a.strip()] = b.strip()
    return out or None


def score(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the score document instead of the summary.")] = False,
) -> None:
    """Score a run into a new numbered score version (scores/score-NNNN.json); older versions stay."""
    from assay.report.markdown import render_summary
    from assay.score import read_score, write_score

    path = write_score(run_dir)
    doc = read_score(path)
    if as_json:
        print(json.dumps(doc, indent=1))
        return
    print(render_summary(doc))
    print(f"score version {doc['score_version']} written: {path}")


def report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    compare: Annotated[Optional[Path], typer.Option("--compare", help="Baseline run directory to compare against.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="html | md | json")] = "html",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default RUN_DIR/reports/report.EXT; '-' prints).")] = None,
    pair: Annotated[list[str], typer.Option("--pair", help="Pair agents across runs: BASELINE=CANDIDATE (repeatable).")] = [],  # noqa: B006
) -> None:
    """Write a report of a run: self-contained HTML, Markdown, or the versioned JSON."""
    from assay.report import build_report, write_report

    if out is not None and str(out) == "-":
        print(build_report(run_dir, fmt, compare=compare, agent_map=_agent_map(pair)), end="")
        return
    path = write_report(run_dir, fmt, out=out, compare=compare, agent_map=_agent_map(pair))
    print(f"report written: {path}")


def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline run directory.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate run directory.")],
    fail_if: Annotated[list[str], typer.Option("--fail-if", help="CI gate on a delta, e.g. 'strict_rate<-0.05', or 'gate'.")] = [],  # noqa: B006
    pair: Annotated[list[str], typer.Option("--pair", help="Pair agents across runs: BASELINE=CANDIDATE (repeatable).")] = [],  # noqa: B006
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare two runs on their shared tasks only; exit 1 when a --fail-if threshold trips."""
    from assay.report.markdown import render_compare
    from assay.score import score_run
    from assay.score.compare import Threshold, compare_scores

    thresholds = [Threshold.parse(t) for t in fail_if]
    cmp = compare_scores(score_run(baseline), score_run(candidate), agent_map=_agent_map(pair), thresholds=thresholds)
    print(json.dumps(cmp, indent=1) if as_json else render_compare(cmp))
    if cmp["regressed"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(score)
    app.command()(report)
    app.command()(compare)
