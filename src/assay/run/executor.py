"""The local executor: runs the planned trials on a bounded pool, resuming what is on disk.

A trial is *done* when its latest attempt is final (not a retryable infra error) or its retry
allowance is spent. Attempts that were in flight when a runner died have a started marker but
no result: they are closed as partial ``infra_error``/``interrupted`` results (kept, never
deleted) and the trial gets a new attempt. Interrupted attempts do not use up retries, nor do
attempts cut by the run budget (``run_budget``). Once the run budget is reached no attempt
starts: the trial stays pending for a resume with a higher budget.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from assay.records.results import AttemptResult, EndState, Timings
from assay.run.attempt.trial import RunContext, new_trace, run_attempt
from assay.run.closing import NOT_THE_TRIALS
from assay.run.hooks import Dispatcher
from assay.run.plan import PlannedTrial
from assay.run.recorder import RunDirRecorder
from assay.run.requeue import attach, may_start, retry_reason
from assay.run.schedule import Limiter, run_all
from assay.store.fastread import decode_result
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source


@dataclass(frozen=True)
class RetryPolicy:
    """Retries happen only for classified, retryable infrastructure errors."""

    max_retries: int = 1

    def should_retry(self, history: list[AttemptResult]) -> bool:
        last = history[-1]
        if last.end_state is not EndState.infra_error or not last.retryable:
            return False
        if last.reason in NOT_THE_TRIALS:
            return True  # the runner's death, the deadline or the run's budget is not the trial's: no retry used
        used = sum(1 for r in history if r.end_state is EndState.infra_error and r.reason not in NOT_THE_TRIALS)
        return used <= self.max_retries

    def may_requeue(self, history: list[AttemptResult]) -> bool:
        """`assay ctl requeue-infra`: a trial that ended on an infrastructure error not retried by
        itself gets one more attempt now, while its infrastructure errors are within ``max_retries``."""
        if not history or history[-1].end_state is not EndState.infra_error:
            return False
        used = sum(1 for r in history if r.end_state is EndState.infra_error and r.reason not in NOT_THE_TRIALS)
        return used <= self.max_retries


def close_interrupted(rd: RunDir, ctx: RunContext, trial: PlannedTrial, recorder: RunDirRecorder) -> list[AttemptResult]:
    """Write partial results for attempts that started but never finished; return all results."""
    history: list[AttemptResult] = []
    task = ctx.suite.task(trial.task_id)
    for n in rd.attempts_of(trial.id):
        res = rd.result(trial.id, n)
        if res is None:
            info = rd.started_info(trial.id, n)
            if info is None:
                continue  # an empty folder: the attempt never began
            started = float(info.get("ts", time.time()))
            res = AttemptResult(
                run_id=ctx.run_id, trial_id=trial.id, task_id=trial.task_id, category=task.spec.category,
                variant=trial.variant, agent=trial.agent, repetition=trial.repetition, attempt=n,
                end_state=EndState.infra_error, reason="interrupted", retryable=True, partial=True,
                retry_reason=info.get("retry_reason"), timings=Timings(started_at=started, ended_at=time.time()),
                errors=["the runner stopped while this attempt was in flight; closed on resume"],
            )
            trace = new_trace(ctx, trial)
            trace.attempt = n
            trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": "infra_error", "reason": "interrupted",
                                                                 "partial": True})
            recorder.assay_attempt_finished(res, trace.take())
        history.append(res)
    return history


async def run_trial(ctx: RunContext, trial: PlannedTrial, events: Dispatcher, policy: RetryPolicy, *,
                    admit: Callable[[], Awaitable[None]] | None = None, requeued: str | None = None) -> None:
    """Attempts of one trial until one is final, each announced on the run's event stream: its
    start (the recorder writes the marker) and its sealed result with its events (the recorder
    writes them), then the plugins hear of it. ``admit`` is awaited before each attempt (a paused
    run waits there); ``requeued``: who requeued the trial's infrastructure error (one more try)."""
    rd = ctx.run_dir
    recorder = events.writer
    history = close_interrupted(rd, ctx, trial, recorder)
    if not may_start(policy, history, requeued):
        return
    trace = new_trace(ctx, trial)
    events.attach(trace)
    try:
        while True:
            if ctx.run_budget is not None and ctx.run_budget.reached:
                return  # the run budget is spent: no new attempt; the trial stays pending
            if admit is not None:
                await admit()
            attempt = (history[-1].attempt + 1) if history else 1
            reason, requeued = retry_reason(history, requeued), None
            events.notify("assay_attempt_started", trial.id, trial_id=trial.id, attempt=attempt,
                          retry_reason=reason)
            result = await run_attempt(ctx, trial, attempt, retry_reason=reason, trace=trace)
            history.append(result)
            final = not policy.should_retry(history)
            events.notify("assay_attempt_finished", trial.id, result=result, final=final, events=trace.take())
            if final:
                return
    finally:
        events.detach(trace)
        recorder.write_events(trial.id, trace.take())  # recorded after the last result (a plugin's failure on it)


def pending_trials(rd: RunDir, plan: list[PlannedTrial], policy: RetryPolicy) -> list[PlannedTrial]:
    """Trials that still need an attempt (read-only: does not close interrupted attempts). Each
    result is decoded by the scorer's fast reader (pydantic for what it refuses, which names a
    damaged one as :meth:`RunDir.result` does): a resume of 2x10^5 trials read them in 13.6 s."""
    out = []
    for t in plan:
        found = [rd.result_bytes(t.id, n) for n in rd.attempts_of(t.id)]
        results = [None if f is None else decode_result(*f) for f in found]
        done = [r for r in results if r is not None]
        if len(done) < len(results) or not done or policy.should_retry(done):
            out.append(t)
    return out


async def execute(ctx: RunContext, plan: list[PlannedTrial], events: Dispatcher, *, jobs: int = 1,
                  policy: RetryPolicy | None = None, limiter: Limiter | None = None, control: Any = None) -> None:
    """Run every pending trial of ``plan``, in that order, within ``limiter`` (else ``jobs`` at once);
    ``control`` (:class:`~assay.run.control.RunControl`) may requeue trials while they run."""
    policy = policy or RetryPolicy()
    limiter = limiter or Limiter(jobs)

    async def one(trial: PlannedTrial, requeued: str | None = None) -> None:
        with req.running(trial.id) if req is not None else nullcontext():
            async with limiter.slot(trial, uses_model=ctx.agents[trial.agent].needs_gateway):
                await run_trial(ctx, trial, events, policy, admit=limiter.admit, requeued=requeued)

    req = attach(control, ctx.run_dir, policy, plan, one)
    await run_all((one(t) for t in plan), req.more if req is not None else None)
