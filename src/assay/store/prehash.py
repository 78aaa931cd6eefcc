"""The score versions of a run hashed in a thread while its trials are read.

`assay verify` checked the score versions last, after every trial: at 10^6 trials each is
765 MB of rows, about 0.75 s of hashing one after the other on one core while the other idled.
hashlib and the reads let go of the interpreter's lock, so a thread started with the scan hashes
them beside it. Each file is opened without following a link, and only a regular file is hashed.
Its digest is used at the end only if the file is still the one hashed: the same device, inode,
size, modification and change times as before and after the hashing (anything written to it,
renamed over it or linked in its place since is hashed again, as before). Like every other
reading of verify, it is a reading at one point in time.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

#: bytes read and hashed at once: few enough hand-overs of the interpreter's lock (one per
#: piece, each waiting up to its switch interval behind the scan's Python) to keep the thread's pace
PIECE = 8 << 20

Identity = tuple[int, int, int, int, int]


def identity(st: os.stat_result) -> Identity:
    """What says a file is unchanged since it was hashed: where it is, its size and its times."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Prehash:
    """Files of one folder hashed in a thread of their own, in the order given."""

    def __init__(self, root: Path, rels: list[str]) -> None:
        self._root = root
        self._got: dict[str, tuple[str, Identity]] = {}
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(list(rels),), name="assay-prehash", daemon=True)
        self._thread.start()

    def _run(self, rels: list[str]) -> None:
        buf = bytearray(PIECE)
        view = memoryview(buf)
        for rel in rels:
            if self._stopped.is_set():
                return
            got = self._hash(os.path.join(self._root, rel), view)
            if got is not None:
                self._got[rel] = got

    def _hash(self, path: str, view: memoryview) -> tuple[str, Identity] | None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None  # gone or a link: the check at the end says which
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return None
            h = hashlib.sha256()
            with open(fd, "rb", buffering=0, closefd=False) as f:
                while n := f.readinto(view):
                    h.update(view[:n])
                    if self._stopped.is_set():
                        return None
            after = os.fstat(fd)
        except OSError:
            return None
        finally:
            os.close(fd)
        return (h.hexdigest(), identity(after)) if identity(before) == identity(after) else None

    def digest(self, rel: str) -> str | None:
        """The SHA-256 of ``rel`` taken by the thread if the file is still the one it hashed (None:
        not hashed, or changed since: hash it again). Waits for the thread to end."""
        self._thread.join()
        got = self._got.get(rel)
        if got is None:
            return None
        try:
            now = os.lstat(os.path.join(self._root, rel))
        except OSError:
            return None
        return got[0] if identity(now) == got[1] else None

    def stop(self) -> None:
        """No more hashing (a scan let go before its end): the thread ends at its next piece."""
        self._stopped.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


__all__ = ["PIECE", "Prehash", "identity"]
