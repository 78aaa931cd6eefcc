"""The watcher's poll runs in a thread: stopping the watcher must wait for a poll in flight.

A poll walks the workspace (the disk bound) with its directories open. Were it still walking
after the sandbox ended, the next step's unmount of an overlay workspace (a remount for the
verifier's uid, its stacked view) failed with EBUSY, and the attempt ended as a harness crash
(found on a loaded 2-core machine, under the Ray executor's concurrent attempts)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from assay.sandbox.bwrap import watcher
from assay.spec.budget import Limits


async def test_stop_returns_only_once_the_poll_in_flight_has_ended(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watcher, "POLL_S", 0.0)
    w = watcher.Watcher(Limits(), None, tmp_path)
    entered, release = threading.Event(), threading.Event()
    polls: list[str] = []

    def slow_poll(final: bool = False) -> str | None:  # a workspace walk that takes a while
        polls.append("walk started")
        entered.set()
        release.wait(60)
        polls.append("walk ended")
        return None

    monkeypatch.setattr(w, "_over", slow_poll)
    w.start("pid:[4026531836]", 1, set())
    assert await asyncio.to_thread(entered.wait, 60)
    asyncio.get_running_loop().call_later(0.3, release.set)  # only lets the walk end; stop must wait for it
    try:
        await w.stop()
        assert polls == ["walk started", "walk ended"]
    finally:
        release.set()
    assert w.check(poll=True) is None and polls == ["walk started", "walk ended"]  # no poll starts after stop
    w.pidns = "pid:[4026531836]"
    assert w.check() is None and polls[-1] == "walk ended" and len(polls) == 4  # an exec's own check still runs
