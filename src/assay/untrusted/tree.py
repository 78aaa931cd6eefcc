"""Walking a tree an agent wrote: without recursion, without following anything, and bounded.

``os.walk`` recurses once per directory level (Python 3.11), so 1,000 nested folders — one
``mkdir`` loop for an agent — raise ``RecursionError`` in whatever harness step reads the
workspace, and a path past ``PATH_MAX`` or a folder the agent made unreadable vanishes without a
word. Here every entry is reported with its ``lstat``; an entry that cannot be taken (too deep,
too long a path, unlistable) is reported with ``None`` so the reader records it instead of
silently reading less.

The harness's own work on such a tree is bounded in entries and in time, not only in bytes:
100,000 empty files cost their writer a second and every reader (snapshot, digests, diff) a
copy each. Past :data:`MAX_ENTRIES` entries or ``deadline_s`` seconds the walk stops and
reports one last entry named :data:`OVERFLOW` (a name no file can have) with ``None``: the
rest is unknown, never "unchanged".
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from assay.untrusted.mounts import detach_under

#: folder levels below the root that are walked; deeper entries are reported, not entered
MAX_DEPTH = 64
#: the longest path (bytes) the walker opens by name (Linux's PATH_MAX is 4096)
MAX_PATH = 4000
#: entries one walk of an agent-made tree takes before it stops (the rest: :data:`OVERFLOW`)
MAX_ENTRIES = 50_000
#: seconds one walk of an agent-made tree runs before it stops (the rest: :data:`OVERFLOW`)
WALK_SECONDS = 60.0
#: the name reported for what a bounded walk did not take (NUL: no real entry is named so)
OVERFLOW = b"\x00[entries past the walk's bound, not read]"
_GONE = (errno.ENOENT, errno.ENOTDIR)


def walk_untrusted(root: Path, *, max_entries: int | None = MAX_ENTRIES,
                   deadline_s: float | None = WALK_SECONDS) -> Iterator[tuple[bytes, bytes, os.stat_result | None]]:
    """``(relative name, full path, lstat or None)`` for every entry under ``root``, a folder
    before what it holds, names in sorted order; never follows a link.

    ``None`` means the entry could not be taken as it is (past :data:`MAX_DEPTH` or
    :data:`MAX_PATH`, or a folder that cannot be listed): unknown, to be recorded. An entry
    removed while the walk runs is simply absent. Past ``max_entries`` entries or
    ``deadline_s`` seconds, :data:`OVERFLOW` is the last entry (``None`` for either: no bound,
    for the harness's own bookkeeping that must see every entry)."""
    base = os.fsencode(root)
    stack: list[tuple[bytes, int]] = [(b"", 0)]
    left = max_entries
    until = None if deadline_s is None else time.monotonic() + deadline_s
    while stack:
        rel_dir, depth = stack.pop()
        full_dir = os.path.join(base, rel_dir) if rel_dir else base
        try:
            names = _names(full_dir, None if left is None else left + 1)
        except OSError as e:
            if rel_dir and e.errno not in _GONE:
                yield rel_dir, full_dir, None
            continue
        subdirs: list[bytes] = []
        for name in names:
            if left is not None:
                left -= 1
            if (left is not None and left < 0) or (until is not None and time.monotonic() > until):
                yield OVERFLOW, base, None
                return
            rel = os.path.join(rel_dir, name) if rel_dir else name
            full = os.path.join(base, rel)
            if len(full) > MAX_PATH:
                yield rel, full, None
                continue
            try:
                st = os.lstat(full)
            except OSError as e:
                if e.errno not in _GONE:  # removed since the listing: not there, nothing unknown
                    yield rel, full, None
                continue
            if stat.S_ISDIR(st.st_mode) and depth + 1 > MAX_DEPTH:
                yield rel, full, None
                continue
            yield rel, full, st
            if stat.S_ISDIR(st.st_mode):
                subdirs.append(rel)
        stack.extend((d, depth + 1) for d in reversed(subdirs))


def _names(folder: bytes, most: int | None) -> list[bytes]:
    """A folder's names, sorted; at most ``most`` of them read (one folder can hold millions)."""
    if most is None:
        return sorted(os.listdir(folder))
    out: list[bytes] = []
    with os.scandir(folder) as it:
        for entry in it:
            out.append(entry.name)
            if len(out) >= most:
                break
    return sorted(out)


def remove_untrusted(path: Path) -> None:
    """``rm -rf`` for a tree an agent wrote, once its processes are gone: any depth (nested
    folders are moved up to ``path`` and emptied there, so neither recursion, open descriptors
    nor path length grow with depth), never through a link, unreadable folders opened up first.
    Errors are ignored, like ``shutil.rmtree(ignore_errors=True)`` (which recursion defeats).
    Mounts inside ``path`` are detached first (:mod:`assay.untrusted.mounts`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _quietly(os.unlink, path)
        return
    detach_under(path)  # never delete through a mount (an overlay's lower is a task's fixture)
    top = _open_dir(os.fsencode(path), None)
    if top is None:
        return
    prefix, moved = f".assay-rm-{secrets.token_hex(4)}-", 0
    pending: list[str | bytes | None] = [None]  # None: ``path`` itself; else a folder inside it
    try:
        while pending:
            name = pending.pop()
            fd = top if name is None else _open_dir(name, top)
            if fd is None:
                continue
            try:
                for entry in _list(fd):
                    try:
                        est = os.stat(entry, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    if not stat.S_ISDIR(est.st_mode):
                        _quietly(os.unlink, entry, dir_fd=fd)
                    elif fd == top:
                        pending.append(entry)
                    else:
                        moved += 1
                        hoisted = f"{prefix}{moved}"
                        if _quietly(os.rename, entry, hoisted, src_dir_fd=fd, dst_dir_fd=top):
                            pending.append(hoisted)
            finally:
                if fd != top:
                    os.close(fd)
            if name is not None:
                _quietly(os.rmdir, name, dir_fd=top)
    finally:
        os.close(top)
    _quietly(os.rmdir, path)


def _open_dir(name: str | bytes, dir_fd: int | None) -> int | None:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(2):
        try:
            return os.open(name, flags, dir_fd=dir_fd)
        except PermissionError:  # a folder its writer made unreadable: ours to open up
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                if not stat.S_ISDIR(st.st_mode):
                    return None
                os.chmod(name, 0o700, dir_fd=dir_fd)
            except OSError:
                return None
        except OSError:
            return None
    return None


def _list(fd: int) -> list[bytes]:
    try:
        return [os.fsencode(n) for n in os.listdir(fd)]
    except OSError:
        return []


def _quietly(fn: Callable[..., object], *args: Any, **kwargs: Any) -> bool:
    try:
        fn(*args, **kwargs)
        return True
    except OSError:
        return False


__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "MAX_PATH", "OVERFLOW", "WALK_SECONDS", "remove_untrusted", "walk_untrusted"]
