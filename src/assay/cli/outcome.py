"""How a run ends on the command line: the scorer's table, the CI outputs, the exit verdicts, and
the resume hint when it is interrupted. ``assay run`` calls these; the rules live in the scorer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.records.scores import ScoreDocument
from assay.run.hooks import hookimpl


#: run directories started in this process (one command per process: the CLI's own state)
_STARTED: list[Path] = []


class RunDirSeen:
    """A run plugin that remembers the run directory as soon as the run starts, so an interrupt
    (which typer turns into exit 130 before the command sees it) can name it in the hint."""

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        _STARTED.append(Path(run_dir.path))


def last_started() -> Path | None:
    """The run directory of the run started last in this process, if any."""
    return _STARTED[-1] if _STARTED else None


def resume_hint() -> str:
    """The line printed on an interrupt (exit 130)."""
    where = str(_STARTED[-1]) if _STARTED else "RUN_DIR"
    return f"INTERRUPTED: results written so far are kept; resume with `assay run --resume {where}`"


def check_budget(outcome: Any) -> None:
    """Exit 6 when the run budget left trials pending: the run is incomplete, never a pass. A
    resume that could start nothing (the budget was already spent) says so."""
    from assay.errors import RunBudgetReached
    from assay.run_budget.meter import describe_spend

    b = outcome.budget
    if b is None or not b.stopped:
        return
    where = outcome.run_dir.path
    head = ("nothing new ran: the run budget was already reached" if b.reached_at_start
            else "the run budget stopped the run")
    raise RunBudgetReached(f"{head} ({describe_spend(b.spend)}); {len(b.pending)} planned trial(s) did not finish "
                           f"and are not scored as passes; continue with `assay run --resume {where} --max-cost HIGHER` "
                           "(or --max-tokens HIGHER)")


def check_stopped(outcome: Any) -> None:
    """Exit 6 when `assay ctl stop` left trials pending: the run is incomplete, never a pass."""
    from assay.errors import Verdict

    if not getattr(outcome, "stopped", None):
        return

    class RunStoppedIncomplete(Verdict):
        exit_code = 6
        label = "INCOMPLETE"

    raise RunStoppedIncomplete(f"stopped by `assay ctl stop`: {len(outcome.stopped)} planned trial(s) did not run and "
                               f"are not scored; continue with `assay run --resume {outcome.run_dir.path}`")


def score_finished_run(run_dir: Path, rows: Path | None, *, junit: Path | None = None,
                       summary_md: Path | None = None) -> ScoreDocument:
    """Score the run by the scorer's rules (no score version is written) and write the CI outputs
    asked for; the caller prints the table, then :func:`assay.score.gates.check_run` gives the
    verdict (exit 5 when nothing was scored, 4 above the infra threshold). With a folder ``rows``
    the trial rows stream into it and the document reads them back from there while it lasts, so
    a large run's rows are never all in memory; without, the document holds them, every result's
    digest and each unit's trial ids, as `assay run --json` prints it."""
    from assay.report.ci import run_started, write_ci_outputs
    from assay.report.heldout import held_out_of
    from assay.score.engine import score_run, scored_to_side_file
    from assay.store.rundir import RunDir

    rd = RunDir.open(run_dir)  # one for the score, the held-out tasks and the start: its manifest parsed once
    doc = score_run(rd, verify=False) if rows is None else scored_to_side_file(rd, rows, verify=False)
    write_ci_outputs(doc, junit=junit, summary_md=summary_md, held=held_out_of(rd), started_at=run_started(rd))
    return doc
