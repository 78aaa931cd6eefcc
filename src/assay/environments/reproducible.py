"""What makes two builds of one plan the same image: one fixed ``SOURCE_DATE_EPOCH`` for
mmdebstrap and every step (dpkg, Python's byte code in checked-hash mode, shadow's dates), and a
scrub of what a build leaves that depends on when and where it ran (apt's lists and caches,
logs, ldconfig's and debconf's caches, backup files), then every mtime clamped to that epoch.

The rootfs digest never covers mtimes; the OCI export's layer does (tar headers), so the clamp
is what makes the exported image's digest repeat. Not covered here: the Debian archive moving
between two builds (a host without a pinned snapshot in its sources gets the packages of the
day), and pip packages not pinned by version and hash (``pip: [pandas]`` is whatever PyPI has).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from assay.untrusted.rooted import resolve_in

#: 2024-01-01T00:00:00Z: the epoch every build claims (a constant, so equal inputs anywhere agree)
SOURCE_DATE_EPOCH = 1704067200

#: folders whose contents a build leaves by when it ran (kept, emptied)
_EMPTIED = ("var/lib/apt/lists", "var/cache/apt", "var/log/apt", "tmp", "var/tmp", "root/.cache")
#: files that record the build's time or host
_REMOVED = ("var/log/dpkg.log", "var/log/alternatives.log", "var/log/bootstrap.log", "var/log/lastlog",
            "var/cache/ldconfig/aux-cache", "etc/machine-id", "var/lib/dbus/machine-id")
_BACKUPS = ("var/lib/dpkg", "var/cache/debconf", "etc")


def env() -> dict[str, str]:
    """What every build process gets in its environment."""
    return {"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)}


def _empty(folder: Path) -> None:
    if folder.is_symlink() or not folder.is_dir():
        return
    for entry in os.scandir(folder):
        p = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(p)
        else:
            p.unlink()
    if folder.name == "lists":  # apt expects its partial folder
        (folder / "partial").mkdir(mode=0o700, exist_ok=True)
    if folder.name == "apt" and folder.parent.name == "cache":
        (folder / "archives" / "partial").mkdir(parents=True, exist_ok=True)


def scrub(rootfs: Path) -> None:
    """Remove what depends on the build's time and host; clamp every mtime to the epoch. The
    rootfs is what a task's Dockerfile built (a third party's): every path is resolved inside it,
    so a link it holds (``/root -> /HOST/PATH``) never leads the harness, which is root, to the
    host's files (before 2026-12-06 the seal emptied such a host folder's ``.cache``)."""
    for rel in _EMPTIED:
        if (folder := resolve_in(rootfs, rel)) is not None:
            _empty(folder)
    for rel in _REMOVED:
        parent = resolve_in(rootfs, os.path.dirname(rel))
        p = parent / os.path.basename(rel) if parent is not None else None
        if p is not None and (p.is_file() or p.is_symlink()):
            p.unlink()
    for rel in _BACKUPS:
        base = resolve_in(rootfs, rel)
        if base is not None and base.is_dir():
            for entry in os.scandir(base):
                if entry.name.endswith("-old") and entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
    clamp(rootfs)


def clamp(root: Path) -> None:
    """Every entry's mtime no later than the epoch, every folder's at it (links themselves,
    never followed; a package's older file dates are its own, the same in every build)."""
    t = SOURCE_DATE_EPOCH
    for dirpath, dirs, files in os.walk(root, topdown=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            if os.lstat(p).st_mtime > t:
                os.utime(p, (t, t), follow_symlinks=False)
        os.utime(dirpath, (t, t), follow_symlinks=False)


__all__ = ["SOURCE_DATE_EPOCH", "clamp", "env", "scrub"]
