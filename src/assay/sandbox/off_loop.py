"""An attempt's blocking work (unmounting its overlay, removing its scratch, handing its workspace
to the sandbox's uid) done in a thread, so the event loop runs the other attempts meanwhile, and
done whole: a caller cancelled while it runs still waits for the end of it, so no unmount or
removal goes on behind the teardown that follows. Imports nothing of assay."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the loop's default executor: its result, or its exception. Cancelled while
    it runs, this still waits for its end, then raises the cancellation."""
    work = asyncio.get_running_loop().run_in_executor(None, fn, *args)
    cancelled = False
    while not work.done():
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:
            cancelled = True  # the work goes on in its thread: wait for its end, then stop as asked
        except BaseException:  # noqa: BLE001 - the work's own failure: raised below by result()
            break
    if cancelled:
        raise asyncio.CancelledError
    return work.result()


__all__ = ["off_loop"]
