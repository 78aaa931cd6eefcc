"""`assay ctl requeue-infra` for any executor: which trials go again now, and the queue they go on.

A trial is chosen when its last attempt ended on an infrastructure error it will not retry by
itself and its infrastructure errors are within ``--max-retries``
(:meth:`~assay.run.executor.RetryPolicy.may_requeue`); a trial queued or running is never chosen
twice. The executor's own coroutine for the trial is put on :attr:`Requeue.more`, which
:func:`~assay.run.schedule.run_all` takes from while the run lasts; the original attempts are kept
(the new one is the next number, its ``retry_reason`` says who requeued it)."""

from __future__ import annotations

import asyncio
from contextlib import contextmanager
from typing import Any, Callable, Coroutine, Iterator

from assay.records.results import AttemptResult
from assay.store.rundir import RunDir

Launch = Callable[[Any, str], Coroutine[Any, Any, None]]  # (planned trial, who requeued it) -> its run


class Requeue:
    """The control's ``requeue`` callable (:class:`~assay.run.control.RunControl`) for one run."""

    def __init__(self, rd: RunDir, policy: Any, plan: list[Any], launch: Launch):
        self.rd, self.policy, self.plan, self.launch = rd, policy, plan, launch
        self.active: set[str] = set()  # trials queued or running
        self.more: asyncio.Queue[Coroutine[Any, Any, None]] = asyncio.Queue()

    @contextmanager
    def running(self, trial_id: str) -> Iterator[None]:
        """Mark a trial as queued or running for as long as its coroutine lasts."""
        self.active.add(trial_id)
        try:
            yield
        finally:
            self.active.discard(trial_id)

    def history(self, trial_id: str) -> list[AttemptResult]:
        return [r for r in (self.rd.result(trial_id, n) for n in self.rd.attempts_of(trial_id)) if r is not None]

    def __call__(self, who: str) -> list[str]:
        chosen = []
        for t in self.plan:
            if t.id in self.active:
                continue
            history = self.history(t.id)
            if self.policy.may_requeue(history) and not self.policy.should_retry(history):
                self.active.add(t.id)
                self.more.put_nowait(self.launch(t, who))
                chosen.append(t.id)
        return chosen


def attach(control: Any, rd: RunDir, policy: Any, plan: list[Any], launch: Launch) -> Requeue | None:
    """A :class:`Requeue` set as ``control.requeue`` (None without a control: nothing can requeue).
    The control's own plan (every trial of the run, not only those pending at start) is the one searched."""
    if control is None:
        return None
    everything = list(control.plan) if getattr(control, "plan", None) else list(plan)
    req = Requeue(rd, policy, everything, launch)
    req.active.update(t.id for t in plan)  # every pending trial is queued, begun yet or not (run_all's backlog)
    control.requeue = req
    return req


def may_start(policy: Any, history: list[AttemptResult], requeued: str | None) -> bool:
    """Whether a trial with ``history`` gets another attempt now (its own retry, or a requeue)."""
    return not history or policy.should_retry(history) or bool(requeued and policy.may_requeue(history))


def retry_reason(history: list[AttemptResult], requeued: str | None) -> str | None:
    """The next attempt's ``retry_reason``: the last attempt's reason, prefixed by who requeued it."""
    reason = history[-1].reason if history else None
    return f"requeued by {requeued}: {reason}" if requeued and history else reason
