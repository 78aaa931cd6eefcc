"""The results log indexed by a process of its own while the scan reads the ledger: at 10^6 results
each takes seconds, and the two are independent, so on two cores the scan waits for the longer
only. ``python -m assay.store.log_child RUN_DIR`` writes the index's :meth:`LogIndex.state` as one
pickled frame on its standard output (a frame between this process and its own child, never read
from anywhere else). A child that cannot start or fails costs only time: the log is indexed here.
"""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path

from assay.store.results_log import LOG, LogIndex, is_log
from assay.store.scan_workers import WORKERS_ENV, child_env

#: a log at least this large is indexed by a child process (one costs about 0.2 s to start)
CHILD_FROM = 64 << 20
_log = logging.getLogger(__name__)


class PendingIndex:
    """The hashed index of a run's results log, being built elsewhere (or here, for a small log)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None
        big = is_log(root / LOG) and os.lstat(root / LOG).st_size >= CHILD_FROM
        if big and workers_allowed():
            try:
                self.proc = subprocess.Popen([sys.executable, "-m", "assay.store.log_child", str(root)],
                                             stdout=subprocess.PIPE, env=child_env())
            except OSError as e:
                _log.warning("no process could start to index %s (%s); indexing it here", root / LOG, e)

    def result(self) -> LogIndex:
        """The index: the child's, or built here when there is none or it failed."""
        if self.proc is not None:
            assert self.proc.stdout is not None
            try:
                state = pickle.load(self.proc.stdout)
                return LogIndex.from_state(self.root, state)
            except (EOFError, OSError, pickle.UnpicklingError) as e:
                _log.warning("the process indexing %s stopped (%s); indexing it here", self.root / LOG,
                             type(e).__name__)
            finally:
                self.proc.stdout.close()
                self.proc.wait()
        return LogIndex(self.root, hashed=True)


def workers_allowed() -> bool:
    """``ASSAY_SCAN_WORKERS=0`` (or 1) reads a run directory in one process: no child here either."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    return value not in ("0", "1")


def _serve(root: str) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr, never into the frame
    pickle.dump(LogIndex(Path(root), hashed=True).state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.close()


if __name__ == "__main__":
    _serve(sys.argv[1])
