"""Scoring commands: score, report, compare. They parse arguments and call assay.score / assay.report;
the verdicts come back as exceptions that cli/main.py maps to the documented exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.cli.perf import compare_perf, is_perf
from assay.errors import DEFAULT_MAX_INFRA_RATE, GateFailed, NothingToCompare, UsageError

JunitOpt = Annotated[Optional[Path], typer.Option("--junit", help="Write a JUnit XML file (one testcase per trial).")]
SummaryOpt = Annotated[Optional[Path], typer.Option(
    "--summary-md", help="Write a Markdown summary (gate, flipped tasks, headline); $GITHUB_STEP_SUMMARY is also honoured.")]
MaxInfraOpt = Annotated[float, typer.Option(
    "--max-infra-rate", min=0.0, max=1.0,
    help="Exit 4 when more than this share of scored trials are infra errors (1 accepts any).")]
PairOpt = Annotated[list[str], typer.Option("--pair", help="Pair agents across runs: BASELINE=CANDIDATE (repeatable).")]
SuiteChangeOpt = Annotated[bool, typer.Option(
    "--allow-suite-change", help="Compare runs of different suites, pairing tasks by digest (changed tasks left out).")]


def agent_map(pairs: list[str]) -> dict[str, str] | None:
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
    junit: JunitOpt = None,
    summary_md: SummaryOpt = None,
    max_infra_rate: MaxInfraOpt = DEFAULT_MAX_INFRA_RATE,
) -> None:
    """Score a run into a new numbered score version (scores/score-NNNN.json and its trial rows in
    score-NNNN.trials.jsonl); older versions stay."""
    from assay.report.ci import run_started, write_ci_outputs
    from assay.report.heldout import held_out_of
    from assay.report.markdown import render_summary
    from assay.score import read_score, write_score
    from assay.score.gates import check_run
    from assay.spec.user_file import check_output_path
    from assay.store.rundir import RunDir

    check_output_path("--junit", junit)
    check_output_path("--summary-md", summary_md)
    rd = RunDir.open(run_dir)  # one for the score, the held-out tasks and the start: its manifest parsed once
    path = write_score(rd)
    doc = read_score(path)
    if as_json:  # the document with its rows inline, as `report -f json -o -` prints it
        from assay.records.trial_file import iter_trials

        inline = doc.model_copy(update={"trials": list(iter_trials(doc)), "trials_file": None})
        print(json.dumps(inline.dump(), indent=1))
    else:
        print(render_summary(doc))
        print(f"score version {doc.score_version} written: {path}")
    write_ci_outputs(doc, junit=junit, summary_md=summary_md, held=held_out_of(rd), started_at=run_started(rd))
    check_run(doc, max_infra_rate=max_infra_rate)


def report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    compare: Annotated[Optional[Path], typer.Option("--compare", help="Baseline run directory to compare against.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="html | md | json")] = "html",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file (default RUN_DIR/reports/report.EXT; '-' prints).")] = None,
    pair: PairOpt = [],  # noqa: B006
    allow_suite_change: SuiteChangeOpt = False,
) -> None:
    """Write a report of a run: self-contained HTML, Markdown, or the versioned JSON."""
    from assay.report import build_report, write_report

    opts = dict(compare=compare, agent_map=agent_map(pair), allow_suite_change=allow_suite_change)
    if out is not None and str(out) == "-":
        print(build_report(run_dir, fmt, **opts), end="")  # type: ignore[arg-type]
        return
    path = write_report(run_dir, fmt, out=out, **opts)  # type: ignore[arg-type]
    print(f"report written: {path}")


def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline run directory.")],
    candidate: Annotated[Path, typer.Argument(help="Candidate run directory.")],
    fail_if: Annotated[list[str], typer.Option("--fail-if", help="CI gate: 'strict_rate<-0.05' (delta), "
                                               "'strict_rate.upper<0' (interval bound), or 'gate'.")] = [],  # noqa: B006
    pair: PairOpt = [],  # noqa: B006
    allow_suite_change: SuiteChangeOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    junit: JunitOpt = None,
    summary_md: SummaryOpt = None,
) -> None:
    """Compare two runs on their shared tasks only: exit 1 when a --fail-if threshold trips, 5 when
    there is nothing to compare."""
    import tempfile

    from assay.report.ci import run_started, write_ci_outputs
    from assay.report.heldout import held_out_of
    from assay.report.markdown import render_compare
    from assay.score.compare import compare_scores
    from assay.score.engine import score_figures, scored_to_side_file
    from assay.score.gates import Threshold
    from assay.store.rundir import RunDir

    if is_perf(baseline) or is_perf(candidate):  # performance folders: their own gates
        if not (is_perf(baseline) and is_perf(candidate)):
            raise UsageError(f"{baseline if is_perf(baseline) else candidate} is a performance folder and the other "
                             "is not (fix: compare two `assay perf` folders, or two run directories)")
        return compare_perf(baseline, candidate, fail_if, as_json)
    thresholds = [Threshold.parse(t) for t in fail_if]
    pairs = agent_map(pair)
    base_rd = RunDir.open(baseline)  # a mistyped baseline is said before the candidate is scored
    with tempfile.TemporaryDirectory(prefix="assay-compare-") as rows:  # the candidate's rows, for its CI outputs
        # each side's RunDir reads its manifest once, and is let go once scored: the candidate's
        # manifest and log index are not held while the baseline is scored (140 MB at 10^6 trials)
        cand_rd = RunDir.open(candidate)
        cand = scored_to_side_file(cand_rd, Path(rows))
        held, started = held_out_of(cand_rd), run_started(cand_rd)
        del cand_rd
        base = score_figures(base_rd)
        held |= held_out_of(base_rd)
        del base_rd
        cmp = compare_scores(base, cand, agent_map=pairs, thresholds=thresholds, allow_suite_change=allow_suite_change)
        print(json.dumps(cmp.dump(), indent=1) if as_json else render_compare(cmp))
        write_ci_outputs(cand, cmp, junit=junit, summary_md=summary_md, held=held, started_at=started)
    if cmp.nothing_to_compare:
        raise NothingToCompare(cmp.nothing_to_compare)
    if cmp.regressed:
        raise GateFailed("; ".join(cmp.failed))


def register(app: typer.Typer) -> None:
    app.command()(score)
    app.command()(report)
    app.command()(compare)
