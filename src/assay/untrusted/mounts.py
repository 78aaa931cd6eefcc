"""Mounts under a folder about to be removed: detached first, so a removal never deletes through
a mount (an overlay workspace a crashed harness left, whose lower is a task's fixture, or any
bind someone made) and never stops at a busy mount point. Imports nothing of assay."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

_libc = ctypes.CDLL(None, use_errno=True)
_MNT_DETACH = 2


def umount2(target: bytes, flags: int = 0) -> None:
    if _libc.umount2(target, flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"umount {os.fsdecode(target)}: {os.strerror(err)}")


def _unescape(field: bytes) -> bytes:
    """mountinfo's octal escapes (``\\040`` for a space) decoded."""
    out, i = bytearray(), 0
    while i < len(field):
        if field[i:i + 1] == b"\\" and field[i + 1:i + 4].isdigit():
            out.append(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return bytes(out)


def mounts_under(path: Path) -> list[bytes]:
    """Mount points at or inside ``path`` (deepest first), from this process's mountinfo."""
    top = os.fsencode(os.path.realpath(path)).rstrip(b"/")
    base = top + b"/"
    try:
        lines = Path("/proc/self/mountinfo").read_bytes().splitlines()
    except OSError:
        return []
    points = set()
    for line in lines:  # read before every removal: each line split once, unescaped only where escaped
        fields = line.split(b" ", 5)
        if len(fields) > 4:
            points.add(_unescape(fields[4]) if b"\\" in fields[4] else fields[4])
    return sorted((p for p in points if p.startswith(base) or (p == top and top)), key=len, reverse=True)


def detach_under(path: Path) -> int:
    """Detach every mount at or inside ``path`` (lazily: busy ones too); how many. Without the right
    to unmount, nothing happens (the removal then fails at the mount point, never beneath it)."""
    n = 0
    for point in mounts_under(path):
        try:
            umount2(point, _MNT_DETACH)
            n += 1
        except OSError:
            pass
    return n


__all__ = ["detach_under", "mounts_under", "umount2"]
