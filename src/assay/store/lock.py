"""One runner per run directory.

A second runner on the same run directory would close the first one's live attempts as
"interrupted" and race it for attempt numbers. The runner holds an exclusive ``flock`` on
``RUN_DIR/runner.lock`` for as long as it runs; the kernel drops it when the process dies (even
by ``kill -9``), so a crashed run is never locked out of its resume (a child the dead runner forked
holds it until its exec: waited for, see :func:`_taken_from_orphan`). The lock file is not
evidence: it is left in place (removing a lock file races other openers) and never checked. It
is created empty once and never written: a resume that has nothing to do leaves the run
directory as it was (the holder's pid, for the refusal message, comes from ``/proc/locks``).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import TracebackType

from assay.errors import RunDirError

LOCK = "runner.lock"


class RunLock:
    """Exclusive, non-blocking lock of one run directory; refuses at once when held elsewhere."""

    def __init__(self, run_dir: Path | str):
        self.path = Path(run_dir) / LOCK
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        try:
            try:  # an existing lock file is only read: flock needs no write access, and nothing changes
                fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as e:
            raise RunDirError(f"{self.path}: cannot open the run lock ({e.strerror}); is the run directory writable?") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if _taken_from_orphan(fd):
                self._fd = fd
                return self
            holder = _holder(fd) or os.pread(fd, 64, 0).decode(errors="replace").strip()
            os.close(fd)
            raise RunDirError(f"{self.path.parent} is being run by another assay runner"
                              f"{f' (pid {holder})' if holder.isdigit() else ''}; wait for it to finish, "
                              "or stop it and then `assay run --resume`") from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.release()


#: how long a lock whose taker is dead is waited for (a child it forked holds it until its exec)
ORPHAN_WAIT_S = 5.0


def _taken_from_orphan(fd: int) -> bool:
    """The lock, taken once no live process holds it as its own: a runner killed (``kill -9``)
    while a process it had forked was between its fork and its exec leaves that child holding the
    inherited lock a moment, and a resume started at once would be refused. While the process that
    took the lock is gone, it is tried again for up to :data:`ORPHAN_WAIT_S`; a live runner's lock
    is refused at once."""
    deadline = time.monotonic() + ORPHAN_WAIT_S
    while True:
        holder = _holder(fd)
        if holder.isdigit() and _alive(int(holder)):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    """A process ``pid`` exists and has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != b"Z"


def _holder(fd: int) -> str:
    """The pid holding a flock on the file of ``fd`` (Linux ``/proc/locks``), or ""."""
    st = os.fstat(fd)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            for line in f:
                parts = line.split()
                if "FLOCK" in parts and len(parts) >= 6 and parts[5] == dev:
                    return parts[4]
    except OSError:
        pass
    return ""


def run_lock(run_dir: Path | str) -> RunLock:
    """``with run_lock(RUN_DIR): ...`` — the one runner of that run directory."""
    return RunLock(run_dir)
