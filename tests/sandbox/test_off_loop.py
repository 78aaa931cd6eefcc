"""An attempt's blocking work run off the event loop: the loop serves other coroutines meanwhile,
the work's result and failure come back, and a caller cancelled mid-way still waits for the work's
end before the cancellation goes on (no unmount or removal runs on behind the teardown after it)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from assay.sandbox.off_loop import off_loop


async def _started(event: threading.Event) -> None:
    await asyncio.to_thread(event.wait)


async def test_the_loop_runs_other_work_while_the_blocking_work_runs() -> None:
    started, release = threading.Event(), threading.Event()

    def blocking() -> str:
        started.set()
        release.wait()
        return "done"

    task = asyncio.create_task(off_loop(blocking))
    await _started(started)
    ticks = 0
    for _ in range(20):  # the loop turns while the work blocks in its thread
        await asyncio.sleep(0)
        ticks += 1
    assert ticks == 20 and not task.done()
    release.set()
    assert await task == "done"


async def test_the_works_failure_is_raised() -> None:
    def failing() -> None:
        raise OSError(16, "busy")

    with pytest.raises(OSError, match="busy"):
        await off_loop(failing)


async def test_a_cancelled_caller_waits_for_the_end_of_the_work() -> None:
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def blocking() -> None:
        started.set()
        release.wait()
        finished.set()

    task = asyncio.create_task(off_loop(blocking))
    await _started(started)
    task.cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()  # cancelled, but the work still runs: the caller waits for it
    task.cancel()  # cancelled again: still waits
    for _ in range(20):
        await asyncio.sleep(0)
    assert not task.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()
