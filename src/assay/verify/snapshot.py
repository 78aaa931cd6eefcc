"""The verifier's copy of a workspace: what an agent left, taken without following anything.

The workspace is hostile. A file's claimed size costs its writer nothing when it is sparse
(``truncate -s 256G`` allocates no blocks, so the sandbox's disk bound never sees it), so the
copy keeps holes as holes: it costs what the file really holds, never what it claims.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from assay.spec.digest import text_name
from assay.untrusted.tree import walk_untrusted


def copy_snapshot(src: Path, dst: Path) -> list[str]:
    """Copy regular files, folders and symlinks (as links); skip FIFOs, sockets and devices.

    Returns the relative paths that were skipped, as JSON-safe text (also what :func:`walk_untrusted` could not
    take: too deep, too long, unlistable). Nothing is ever followed through a link, so a link
    pointing out of the workspace stays a dangling-or-outside link in the copy.
    """
    skipped: list[str] = []
    dst.mkdir(parents=True, exist_ok=True)
    if not src.exists():
        return skipped
    out = os.fsencode(dst)
    for rel, full, st in walk_untrusted(src):
        target = os.path.join(out, rel)
        try:
            if st is None:
                raise OSError(errno.ENOENT, "not taken", full)
            if stat.S_ISDIR(st.st_mode):
                os.makedirs(target, exist_ok=True)
            elif stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(full), target)
            elif stat.S_ISREG(st.st_mode):
                copy_regular(full, target)
            else:
                raise OSError(errno.EINVAL, "not a file, folder or link", full)
        except OSError:
            skipped.append(text_name(rel))  # a name that is not UTF-8 escaped: the result must stay writable
    return skipped


def copy_regular(src: Path | bytes, dst: Path | bytes) -> None:
    """Copy one regular file's data segments only (``SEEK_DATA``/``SEEK_HOLE``), never through a
    link and never blocking on something swapped in for the file; the copy has the same size."""
    fd_in = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd_in)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(src))
        fd_out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            for start, end in _data_segments(fd_in, st.st_size):
                _copy_range(fd_in, fd_out, start, end)
            os.ftruncate(fd_out, st.st_size)
            os.fchmod(fd_out, 0o755 if st.st_mode & 0o100 else 0o644)  # the run bit, never set-id bits
        finally:
            os.close(fd_out)
    finally:
        os.close(fd_in)


def _data_segments(fd: int, size: int) -> list[tuple[int, int]]:
    """The byte ranges that hold data; the whole file where the filesystem cannot say."""
    segments: list[tuple[int, int]] = []
    pos = 0
    try:
        while pos < size:
            try:
                start = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # only a hole from here to the end
                    break
                raise
            end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
            segments.append((start, end))
            pos = end
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
            raise
        return [(0, size)] if size else []
    return segments


def _copy_range(fd_in: int, fd_out: int, start: int, end: int) -> None:
    pos = start
    while pos < end:
        n = min(end - pos, 8 << 20)
        try:
            done = os.copy_file_range(fd_in, fd_out, n, pos, pos)
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL):
                raise
            data = os.pread(fd_in, n, pos)
            done = os.pwrite(fd_out, data, pos) if data else 0
        if done <= 0:  # the file shrank under us: keep what was there
            return
        pos += done


__all__ = ["copy_regular", "copy_snapshot"]
