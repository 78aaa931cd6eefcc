"""What evidence folders may hold: regular files and folders, nothing else. A link (even to an
identical copy), a FIFO, a socket or a device is never followed or opened: it is named, so
`assay verify` reports it instead of reading through it, hanging on it or crashing on it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from assay.untrusted.tree import walk_untrusted


def not_regular(path: Path) -> str | None:
    """None for a regular file; else what is there instead ('a link', 'a folder', ...), without
    following a link. A missing path is None too (the caller reports deletions)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a socket or device"


def odd_entries(folder: Path) -> list[tuple[str, str]]:
    """(relative path, what it is) of every entry under ``folder`` that is neither a regular file
    nor a real folder, in sorted order; links to folders are named, never walked into."""
    out: list[tuple[str, str]] = []
    if os.path.islink(folder):
        return [(".", "a link")]
    for rel, _, st in walk_untrusted(folder, max_entries=None, deadline_s=None):  # the harness's own folders
        name = os.fsdecode(rel).replace(os.sep, "/")
        if st is None:
            out.append((name, "unreadable (deeper than 64 folders, a path past 4,000 bytes, or unlistable)"))
        elif not stat.S_ISDIR(st.st_mode) and not stat.S_ISREG(st.st_mode):
            out.append((name, not_regular(folder / name) or "gone"))
    return sorted(out)


def folders_named(folder: Path, names: frozenset[str]) -> list[str]:
    """Relative paths of the real folders under ``folder`` whose name is one of ``names`` (a folder
    where an evidence file belongs: never a reading, always named), sorted; links are not walked."""
    out: list[str] = []
    if os.path.islink(folder):
        return out
    for rel, _, st in walk_untrusted(folder, max_entries=None, deadline_s=None):
        name = os.fsdecode(rel).replace(os.sep, "/")
        if st is not None and stat.S_ISDIR(st.st_mode) and name.rsplit("/", 1)[-1] in names:
            out.append(name)
    return sorted(out)


__all__ = ["folders_named", "not_regular", "odd_entries"]
