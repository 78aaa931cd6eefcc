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
from assay.store.results_log import LOG, LogIndex, is_log, open_log
from assay.store.rundir import LEDGER
from assay.store.scan_workers import WORKERS_ENV, child_env, usable_cores, widen_pipe

#: a log at least this large is indexed by a child process (one costs about 0.2 s to start)
CHILD_FROM = 64 << 20
#: a log at least this large is indexed in halves at once on two or more cores, the second by a
#: process of the child's own (a line costs about 3 us to index: 10^6 lines, an 850 MB log, 3 s)
HALVES_FROM = 256 << 20
_log = logging.getLogger(__name__)


class PendingIndex:
    """The index of a run's results log, being built elsewhere (or here, for a small log)."""

    def __init__(self, root: Path, *, seals: bool = False) -> None:
        self.root = root
        self.proc: subprocess.Popen[bytes] | None = None
        self.with_seals = seals  # the ledger's seals of the lines are wanted too (a checking scan)
        self._index: LogIndex | None = None
        self._seals: LogSeals | None = None
        size = os.lstat(root / LOG).st_size if is_log(root / LOG) else -1
        if size >= CHILD_FROM and workers_allowed():
            halves = size >= HALVES_FROM and usable_cores() >= 2
            try:
                self.proc = subprocess.Popen([sys.executable, "-m", "assay.store.log_child", str(root),
                                              *(["seals"] if seals else []), *(["halves"] if halves else [])],
                                             stdout=subprocess.PIPE, env=child_env())
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


def split_at(path: Path) -> int | None:
    """Where a line starts at or after the middle of the log (None: no line ends after it)."""
    f = open_log(path)
    if f is None:
        return None
    with f:
        middle = os.fstat(f.fileno()).st_size // 2
        f.seek(middle)
        rest = f.readline()  # up to and with the newline that ends the line the middle falls in
    return middle + len(rest) if middle and rest.endswith(b"\n") else None


def part_command(root: Path, start: int) -> list[str]:
    """The process that indexes the log from ``start`` (its key on standard input)."""
    return [sys.executable, "-m", "assay.store.log_child", str(root), "part", str(start)]


def index_in_halves(root: Path) -> LogIndex:
    """The log's index, its second half indexed meanwhile by a process of its own under the same
    key (given on its standard input, never on a command line). A half that cannot be had from it
    (it did not start, failed, or gave a part that does not follow on) is indexed here: the
    index is the one :class:`LogIndex` builds in one pass, whatever happens."""
    mid = split_at(root / LOG)
    key = os.urandom(16)
    if mid is None:
        return LogIndex(root, key=key)
    try:
        proc = subprocess.Popen(part_command(root, mid), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=child_env())
    except OSError as e:
        _log.warning("no process could start to index half of %s (%s); indexing it here", root / LOG, e)
        return LogIndex(root, key=key)
    assert proc.stdin is not None and proc.stdout is not None
    state, index = None, None
    try:
        widen_pipe(proc.stdout.fileno())
        proc.stdin.write(key)
        proc.stdin.close()
        index = LogIndex(root, key=key, stop=mid)
        state = pickle.load(proc.stdout)
    except (EOFError, OSError, pickle.UnpicklingError) as e:
        _log.warning("the process indexing half of %s stopped (%s); indexing it here", root / LOG, type(e).__name__)
    finally:
        proc.stdout.close()
        if state is None and proc.poll() is None:
            proc.kill()
        proc.wait()
    if index is None:  # the key could not be handed over: this half too is indexed here
        index = LogIndex(root, key=key, stop=mid)
    part = LogIndex.from_state(root, state) if isinstance(state, dict) and proc.returncode == 0 else None
    if part is None or not index.join(part):
        index.refresh()  # the rest, from where this half ends
    return index


def _part(root: str, start: int) -> None:
    """The log from ``start`` indexed under the key read from standard input, its state pickled out."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    key = sys.stdin.buffer.read(16)
    if len(key) != 16:
        raise SystemExit("log_child part: no key on standard input")
    pickle.dump(LogIndex(Path(root), key=key, start=start).state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.close()


def _serve(root: str, seals: bool, halves: bool) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr, never into a frame
    index = index_in_halves(Path(root)) if halves else LogIndex(Path(root))
    pickle.dump(index.state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.flush()
    if seals:  # the ledger read after the log: every indexed line's seal was written before it
        pickle.dump(seal_lines(index, Path(root) / LEDGER).state(), out, protocol=pickle.HIGHEST_PROTOCOL)
    out.close()


if __name__ == "__main__":
    if sys.argv[2:3] == ["part"]:
        _part(sys.argv[1], int(sys.argv[3]))
    else:
        _serve(sys.argv[1], "seals" in sys.argv[2:], "halves" in sys.argv[2:])
