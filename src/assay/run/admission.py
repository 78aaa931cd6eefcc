"""How many attempts may be in flight, and whether any may start: the runner's one admission gate.

``assay ctl`` steers a running run through it (`docs/control.md`): *pause* lets the attempts in
flight finish and starts none, *resume* opens the gate again, *jobs N* changes how many run at
once (a lower limit never stops an attempt in flight, it only holds back the next ones), and
*stop* starts no attempt again: the trials not run stay pending for ``assay run --resume``.
Every waiter is woken by the change itself, nothing polls.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import asynccontextmanager
from typing import AsyncIterator


class RunStopped(Exception):
    """``assay ctl stop``: this trial starts no attempt; it stays pending for a resume."""


class Capacity:
    """At most ``limit`` slots held, none granted while paused, and none ever again once stopped.

    Slots go to their waiters in the order they asked (the plan's order), each handed over by the
    release before it: a release wakes one waiter, not every one (waking all of them to look again
    made each trial's end cost the loop as much as there were trials waiting, 10^4 and more at the
    start of a large run). A pause, a new limit or a stop wakes every waiter of :meth:`admit` (an
    :class:`asyncio.Condition`: few wait there), the last release every waiter of :meth:`idle`;
    nothing polls."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.in_use = 0
        self.paused = False
        self.stopped = False
        self._cond: asyncio.Condition | None = None  # made in the running loop, on first use
        self._queue: deque[asyncio.Future[bool]] = deque()  # slot waiters in order; a cancelled one is skipped
        self._idle: list[asyncio.Future[None]] = []  # idle() waiters, woken when the last slot is released

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

    def _grant(self) -> None:
        """Hand free slots to the first waiters (or, once stopped, end every waiter)."""
        while self._queue and (self.stopped or (not self.paused and self.in_use < self.limit)):
            waiter = self._queue.popleft()
            if waiter.done():
                continue  # its trial was cancelled while it waited
            if self.stopped:
                waiter.set_exception(RunStopped())
            else:
                self.in_use += 1
                waiter.set_result(True)

    def _release(self) -> None:
        """A slot given back: to the next waiter, and idle() told when none is held any more."""
        self.in_use -= 1
        self._grant()
        if self.in_use == 0:
            for waiter in self._idle:
                if not waiter.done():
                    waiter.set_result(None)
            self._idle.clear()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        if self.stopped:
            raise RunStopped
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._queue.append(waiter)
        self._grant()  # at once when a slot is free and nobody asked before
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._release()  # granted as it was cancelled: the slot goes to the next one
            else:
                waiter.cancel()  # skipped when its turn comes
            raise
        try:
            yield
        finally:
            self._release()

    async def change(self, *, paused: bool | None = None, limit: int | None = None, stop: bool = False) -> None:
        """Apply one control change and wake every waiter to look again."""
        async with self.cond:
            if paused is not None:
                self.paused = paused
            if limit is not None:
                self.limit = max(1, limit)
            if stop:
                self.stopped = True
            self._grant()
            self.cond.notify_all()

    async def idle(self) -> None:
        """Return once no slot is held (what a stop waits for before the run ends)."""
        while self.in_use:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._idle.append(waiter)
            await waiter
