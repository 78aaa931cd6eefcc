"""How many attempts may be in flight, and whether any may start: the runner's one admission gate.

``assay ctl`` steers a running run through it (`docs/control.md`): *pause* lets the attempts in
flight finish and starts none, *resume* opens the gate again, *jobs N* changes how many run at
once (a lower limit never stops an attempt in flight, it only holds back the next ones), and
*stop* starts no attempt again: the trials not run stay pending for ``assay run --resume``.
Every waiter is woken by the change itself (an :class:`asyncio.Condition`), nothing polls.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import AsyncIterator


class RunStopped(Exception):
    """``assay ctl stop``: this trial starts no attempt; it stays pending for a resume."""


class Capacity:
    """At most ``limit`` slots held, none granted while paused, and none ever again once stopped."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.in_use = 0
        self.paused = False
        self.stopped = False
        self._cond: asyncio.Condition | None = None  # made in the running loop, on first use

    @property
    def cond(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def state(self) -> dict[str, object]:
        return {"jobs": self.limit, "in_flight": self.in_use, "paused": self.paused, "stopped": self.stopped}

    async def admit(self) -> None:
        """Wait while paused; raise :class:`RunStopped` once stopped (before every attempt)."""
        async with self.cond:
            await self.cond.wait_for(lambda: self.stopped or not self.paused)
            if self.stopped:
                raise RunStopped

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self.cond:
            await self.cond.wait_for(lambda: self.stopped or (not self.paused and self.in_use < self.limit))
            if self.stopped:
                raise RunStopped
            self.in_use += 1
        try:
            yield
        finally:
            async with self.cond:
                self.in_use -= 1
                self.cond.notify_all()

    async def change(self, *, paused: bool | None = None, limit: int | None = None, stop: bool = False) -> None:
        """Apply one control change and wake every waiter to look again."""
        async with self.cond:
            if paused is not None:
                self.paused = paused
            if limit is not None:
                self.limit = max(1, limit)
            if stop:
                self.stopped = True
            self.cond.notify_all()

    async def idle(self) -> None:
        """Return once no slot is held (what a stop waits for before the run ends)."""
        async with self.cond:
            await self.cond.wait_for(lambda: self.in_use == 0)
