"""Scheduling that keeps comparisons fair: a shuffled trial order and bounded concurrency.

Run in matrix order, one agent's trials would all meet the same minute of the provider's rate
limit and the same warm cache; the seeds warn about exactly that bias. The order is shuffled
with a seed recorded in the manifest (the manifest's trial list *is* the shuffled order, so a
resume runs the same order), and the attempts in flight are bounded per agent and per upstream
model as well as in total. Both executors (local and Ray) use this one module.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from contextlib import AsyncExitStack, asynccontextmanager
from typing import AsyncIterator

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
        self._total = asyncio.Semaphore(self.jobs)
        self._agents: dict[str, asyncio.Semaphore] = {}
        self._model = asyncio.Semaphore(per_model) if per_model and model else None

    def record(self) -> dict[str, int | None]:
        return {"jobs": self.jobs, "max_per_agent": self.per_agent, "max_per_model": self.per_model}

    @asynccontextmanager
    async def slot(self, trial: PlannedTrial, *, uses_model: bool = True) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if self.per_agent:
                sem = self._agents.setdefault(trial.agent, asyncio.Semaphore(self.per_agent))
                await stack.enter_async_context(sem)
            if self._model is not None and uses_model:
                await stack.enter_async_context(self._model)
            await stack.enter_async_context(self._total)
            yield
