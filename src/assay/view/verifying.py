"""The viewer's background verification: one thread that runs the full `assay verify` of each run
whose row was built from its sealed files only, most wanted first.

A row is first built cheaply (:func:`~assay.view.catalog.build_row` with ``full=False``: the
manifest and the latest score version each checked against the digest sealed for it in the
ledger), shown as *verifying…*, and replaced by the fully verified row (or a TAMPERED one) when
this thread is done with it. A page that shows one run asks for it first (``urgent``)."""

from __future__ import annotations

import threading
import traceback
from collections import deque
from typing import Callable


class Verifier:
    """A queue of run names and the one daemon thread that verifies them, in order."""

    def __init__(self, verify: Callable[[str], None]):
        self._verify = verify
        self._queue: deque[str] = deque()
        self._wanted: set[str] = set()
        self._current: str | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def want(self, names: list[str], *, urgent: bool = False) -> None:
        """Queue ``names`` (at the front when ``urgent``); a name already queued moves only when urgent."""
        with self._cond:
            for name in reversed(names) if urgent else names:
                if name in self._wanted:
                    if not urgent or name == self._current:
                        continue
                    self._queue.remove(name)
                self._wanted.add(name)
                if urgent:
                    self._queue.appendleft(name)
                else:
                    self._queue.append(name)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="assay-view-verify", daemon=True)
                self._thread.start()
            self._cond.notify()

    def pending(self) -> list[str]:
        """The runs queued or being verified now."""
        with self._cond:
            return sorted(self._wanted)

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._queue))
                name = self._current = self._queue.popleft()
            try:
                self._verify(name)
            except Exception:  # noqa: BLE001 - the thread goes on with the next run whatever one did
                traceback.print_exc()
            finally:
                with self._cond:
                    self._current = None
                    self._wanted.discard(name)
