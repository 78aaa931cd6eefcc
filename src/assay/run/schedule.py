"""Scheduling that keeps comparisons fair: a shuffled trial order and bounded concurrency.

Run in matrix order, one agent's trials would all meet the same minute of the provider's rate
limit and the same warm cache; the seeds warn about exactly that bias. The order is shuffled
with a seed recorded in the manifest (the manifest's trial list *is* the shuffled order, so a
resume runs the same order), and the attempts in flight are bounded per agent and per upstream
model as well as in total. Both executors (local and Ray) use this one module.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
from collections import deque
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Coroutine, Iterable

from assay.errors import UsageError
from assay.run.admission import Capacity, RunStopped
from assay.run.plan import PlannedTrial


def new_seed() -> int:
    """A fresh seed for a run's trial order (recorded, so the order can be redone)."""
    return secrets.randbits(32)


def shuffled(plan: list[PlannedTrial], seed: int | None) -> list[PlannedTrial]:
    """``plan`` in the order given by ``seed`` (a pure function of both); None keeps it."""
    if seed is None:
        return list(plan)
    out = list(plan)
    random.Random(seed).shuffle(out)
    return out


class Limiter:
    """At most ``jobs`` attempts in flight, ``per_agent`` of one agent and ``per_model`` using the
    run's upstream model (agents that call no model are not counted against it).

    Semaphores are always taken in the same order (agent, model, total), so no two trials can
    wait on each other, and a trial waiting for its agent's turn holds no global slot."""

    def __init__(self, jobs: int, *, per_agent: int | None = None, per_model: int | None = None,
                 model: str | None = None):
        self.jobs = max(1, jobs)
        self.per_agent = per_agent
        self.per_model = per_model
        self.model = model
        self.capacity = Capacity(self.jobs)  # also paused, retuned and stopped by `assay ctl`
        self._agents: dict[str, asyncio.Semaphore] = {}
        self._model = asyncio.Semaphore(per_model) if per_model and model else None

    def record(self) -> dict[str, int | None]:
        return {"jobs": self.capacity.limit, "max_per_agent": self.per_agent, "max_per_model": self.per_model}

    @asynccontextmanager
    async def slot(self, trial: PlannedTrial, *, uses_model: bool = True) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if self.per_agent:
                sem = self._agents.setdefault(trial.agent, asyncio.Semaphore(self.per_agent))
                await stack.enter_async_context(sem)
            if self._model is not None and uses_model:
                await stack.enter_async_context(self._model)
            await stack.enter_async_context(self.capacity.slot())
            yield

    async def admit(self) -> None:
        """Before each attempt of a trial holding its slot: wait while paused, stop once stopped."""
        await self.capacity.admit()


@dataclass(frozen=True)
class ExecutorOptions:
    """Where attempts run: ``local`` (this process), ``procs`` (worker processes of this machine;
    run/cluster/procs.py) or ``ray`` (a cluster; run/cluster/executor.py)."""

    name: str = "local"
    address: str | None = None  # ray://HOST:PORT, auto, or a GCS address (None: RAY_ADDRESS or a new local cluster)
    services_address: str | None = None  # the head's address as workers reach its services (default: its node IP)
    workers: int | None = None  # procs: worker processes (None: the usable CPUs, at most --jobs)

    def __post_init__(self) -> None:
        if self.name not in EXECUTORS:
            raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, not {self.name!r}")
        if self.address is not None and self.name != "ray":
            raise UsageError("--address is the Ray cluster's address: use it with --executor ray")
        if self.workers is not None and self.name != "procs":
            raise UsageError("--workers is the number of worker processes: use it with --executor procs")
        if self.workers is not None and self.workers < 1:
            raise UsageError(f"--workers must be at least 1, not {self.workers} (omit it for one per usable CPU)")
        if self.name in REMOTE:
            answer_grace()  # a bad value is refused before anything is written


#: beyond the task's wall time (twice: agent and verifier), how long a Ray node (or a procs worker)
#: may take to answer before its attempt is cancelled, closed as lost and retried elsewhere (a node
#: that hangs must not hang the campaign); ``ASSAY_RAY_ANSWER_GRACE_S`` changes it (slow sandbox
#: starts, a test)
ANSWER_GRACE_S = 600.0
GRACE_ENV = "ASSAY_RAY_ANSWER_GRACE_S"


def answer_grace() -> float:
    """The answer timeout's grace (``ASSAY_RAY_ANSWER_GRACE_S``, else :data:`ANSWER_GRACE_S`)."""
    raw = os.environ.get(GRACE_ENV)
    if not raw:
        return ANSWER_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise UsageError(f"{GRACE_ENV}={raw!r}: must be a positive number of seconds (fix: e.g. 600, or unset it)")
    return value


EXECUTORS = ("local", "procs", "ray")
#: the executors whose attempts run away from the head (run/cluster/campaign.py)
REMOTE = ("procs", "ray")


def check_bounds(*, max_per_agent: int | None, max_per_model: int | None, deadline_s: float | None) -> None:
    """Bounds given on the command line, refused before anything is written."""
    for flag, value in (("--max-per-agent", max_per_agent), ("--max-per-model", max_per_model)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, not {value} (omit it for no bound but --jobs)")
    if deadline_s is not None and deadline_s <= 0:
        raise UsageError(f"--deadline must be a positive number of seconds, not {deadline_s}")


async def _unless_stopped(coro: Coroutine[Any, Any, None]) -> None:
    try:
        await coro
    except RunStopped:
        pass  # `assay ctl stop`: the trial stays pending for a resume


#: trials of a plan begun at once, each waiting its turn in the limiter (about 4 KB each while it
#: waits); the next one begins as one ends, so the plan's order is kept. With --max-per-agent, a
#: trial further on waits for the backlog to move even when its agent has room: only after a
#: thousand trials of the other agents in a row, which a shuffled plan does not have
BACKLOG = 1024


async def run_all(coros: Iterable[Coroutine[Any, Any, None]],
                  more: "asyncio.Queue[Coroutine[Any, Any, None]] | None" = None, *,
                  backlog: int | None = BACKLOG) -> None:
    """Run the trials' coroutines, at most ``backlog`` of them begun and not ended at a time (each
    next one begins, in order, as one ends; None: all at once), and each one put on ``more`` while
    any still runs (`assay ctl requeue-infra`); when one fails or the whole is cancelled (a
    deadline, Ctrl-C), the others are cancelled and awaited, so none is left running.

    Begun at once, every trial of a large plan waited in the limiter from the start: about 4 KB
    each (400 MB at 10^5 trials). ``backlog`` keeps a thousand waiting, more than any ``--jobs``
    takes at once. Each trial's task says itself when it ends (one callback), so a trial ending
    costs the same however many are planned: waiting on every task at each ending made the loop's
    own work grow with the square of the trials (1.6 ms a trial at 2x10^4 trials)."""
    loop = asyncio.get_running_loop()
    ended: deque[asyncio.Task[None]] = deque()
    running: set[asyncio.Task[None]] = set()
    wake: asyncio.Future[None] | None = None

    def on_end(task: asyncio.Task[None]) -> None:
        ended.append(task)
        if wake is not None and not wake.done():
            wake.set_result(None)

    def start(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.create_task(_unless_stopped(coro))
        running.add(task)
        task.add_done_callback(on_end)
        return task

    planned = iter(coros)
    begun: set[asyncio.Task[None]] = set()  # the plan's own, counted against the backlog

    def begin() -> None:
        while backlog is None or len(begun) < backlog:
            coro = next(planned, None)
            if coro is None:
                return
            begun.add(start(coro))

    next_more: asyncio.Task[Any] | None = None
    try:
        begin()
        while True:
            while ended:
                task = ended.popleft()
                running.discard(task)
                begun.discard(task)
                task.result()  # a trial's failure ends the run as it always did
            begin()
            while more is not None and not more.empty():
                start(more.get_nowait())
            if not running:
                return
            wake = loop.create_future()
            if more is not None:
                next_more = next_more or asyncio.create_task(more.get())
            await asyncio.wait([w for w in (wake, next_more) if w is not None], return_when=asyncio.FIRST_COMPLETED)
            if next_more is not None and next_more.done():
                coro, next_more = next_more.result(), None
                start(coro)
    finally:
        if next_more is not None:
            next_more.cancel()
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
