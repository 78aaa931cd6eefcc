"""Closing an attempt that will never finish by itself: its worker node died, or the campaign's
deadline came. The attempt is kept as a partial ``infra_error`` with the reason, and announced
like any finished attempt (the run directory's recorder writes it)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable

from assay.records.results import AttemptResult, EndState, Timings
from assay.run.attempt.trial import RunContext, new_trace
from assay.run.plan import PlannedTrial
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter

#: reasons of closed attempts that are not the trial's fault: a resume runs them again and they
#: never use up the trial's retries
NOT_THE_TRIALS = ("interrupted", "deadline", "run_budget")


def closed_attempt(ctx: RunContext, trial: PlannedTrial, attempt: int, trace: TraceWriter, *, reason: str,
                   message: str, started: float, retry_reason: str | None,
                   sandbox: dict[str, Any] | None = None) -> AttemptResult:
    """The partial result of an attempt stopped from outside; its end event goes to ``trace``."""
    task = ctx.suite.task(trial.task_id)
    trace.attempt = attempt
    trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": "infra_error", "reason": reason, "partial": True})
    return AttemptResult(
        run_id=ctx.run_id, trial_id=trial.id, task_id=trial.task_id, category=task.spec.category,
        variant=trial.variant, agent=trial.agent, repetition=trial.repetition, attempt=attempt,
        end_state=EndState.infra_error, reason=reason, retryable=True, partial=True, retry_reason=retry_reason,
        timings=Timings(started_at=started, ended_at=time.time()), errors=[message], sandbox=sandbox or {})


def close_at_deadline(ctx: RunContext, plan: list[PlannedTrial], recorder: Any) -> list[AttemptResult]:
    """After the campaign's deadline stopped every attempt in flight: each one that started and
    has no result is closed as ``deadline`` (a resume runs it again); returns those closed."""
    rd = ctx.run_dir
    out = []
    for trial in plan:
        for n in rd.attempts_of(trial.id):
            info = rd.started_info(trial.id, n)
            if info is None or rd.result(trial.id, n) is not None:
                continue
            trace = new_trace(ctx, trial)
            res = closed_attempt(ctx, trial, n, trace, reason="deadline", started=float(info.get("ts", time.time())),
                                 retry_reason=info.get("retry_reason"),
                                 message="the campaign deadline came while this attempt was in flight")
            recorder.assay_attempt_finished(res, trace.take())
            out.append(res)
    return out


async def within_deadline(run: Awaitable[None], deadline_s: float | None, ctx: RunContext, plan: list[PlannedTrial],
                          recorder: Any) -> bool:
    """Await the executor, at most ``deadline_s`` seconds; at the deadline everything in flight is
    cancelled (sandboxes released) and closed with a recorded end state. True if it came."""
    if deadline_s is None:
        await run
        return False
    try:
        await asyncio.wait_for(run, deadline_s)
        return False
    except TimeoutError:
        close_at_deadline(ctx, plan, recorder)
        return True
