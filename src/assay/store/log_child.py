"""The results log indexed by a process of its own while the scan reads the ledger: at 10^6 results
each takes seconds, and the two are independent, so on two cores the scan waits for the longer
only. ``python -m assay.store.log_child RUN_DIR [seals]`` writes the index's :meth:`LogIndex.state`
as one pickled frame on its standard output and then, with ``seals``, the ledger's seals of its
lines (:mod:`assay.store.log_seals`), matched while the scan goes on (frames between this process
and its own child, never read from anywhere else). A child that cannot start or fails costs only
time: the log is indexed, or its seals matched, here.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

from assay.store.log_seals import LogSeals, seal_lines
from assay.store.results_log import LOG, LogIndex, is_log
from assay.store.rundir import LEDGER
from assay.store.scan_workers import WORKERS_ENV, child_env, widen_pipe

#: a log at least this large is indexed by a child process (one costs about 0.2 s to start)
CHILD_FROM = 64 << 20
_log = logging.getLogger(__name__)


class PendingIndex:
    """The index of a run's results log, being built elsewhere (or here, for a small log)."""

    def __init__(self, root: Path, *, seals: bool = False) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None
        self.with_seals = seals  # the ledger's seals of the lines are wanted too (a checking scan)
        self._index: LogIndex | None = None
        self._seals: LogSeals | None = None
        big = is_log(root / LOG) and os.lstat(root / LOG).st_size >= CHILD_FROM
        if big and workers_allowed():
            try:
                self.proc = subprocess.Popen([sys.executable, "-m", "assay.store.log_child", str(root),
                                              *(["seals"] if seals else [])], stdout=subprocess.PIPE, env=child_env())
                assert self.proc.stdout is not None
                widen_pipe(self.proc.stdout.fileno())  # the index is one frame of tens of MB
            except OSError as e:
                _log.warning("no process could start to index %s (%s); indexing it here", root / LOG, e)

    def _frame(self) -> object | None:
        """The child's next frame (None: it stopped, or there is none; it is then waited for)."""
        if self.proc is None or self.proc.stdout is None or self.proc.stdout.closed:
            return None
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as e:
            _log.warning("the process indexing %s stopped (%s); doing it here", self.root / LOG, type(e).__name__)
            self.close()
            return None

    def result(self) -> LogIndex:
        """The index: the child's, or built here when there is none or it failed."""
        state = self._frame()
        if not self.with_seals:
            self.close()
        self._index = (LogIndex.from_state(self.root, state) if isinstance(state, dict)
                       else LogIndex(self.root))
        return self._index

    def seals(self) -> LogSeals:
        """The ledger's seals of the index's lines: the child's, or matched here (after :meth:`result`)."""
        assert self._index is not None and self.with_seals
        if self._seals is None:
            state = self._frame()
            self.close()
            self._seals = (LogSeals.from_state(state) if isinstance(state, dict)
                           else seal_lines(self._index, self.root / LEDGER))
        return self._seals

    def close(self) -> None:
        """The child ended (stopped when its frames are no longer wanted)."""
        if self.proc is None:
            return
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit, nothing is left to report to
            pass


def workers_allowed() -> bool:
    """``ASSAY_SCAN_WORKERS=0`` (or 1) reads a run directory in one process: no child here either."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    return value not in ("0", "1")


def _serve(root: str, seals: bool) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr, never into a frame
    index = LogIndex(Path(root))
    pickle.dump(index.state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()
    if seals:  # the ledger read after the log: every indexed line's seal was written before it
        pickle.dump(seal_lines(index, Path(root) / LEDGER).state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.close()


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2:] == ["seals"])
