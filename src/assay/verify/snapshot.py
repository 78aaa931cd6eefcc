"""The verifier's copy of a workspace: what an agent left, taken without following anything."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


def copy_snapshot(src: Path, dst: Path) -> list[str]:
    """Copy regular files, folders and symlinks (as links); skip FIFOs, sockets and devices.

    Returns the relative paths that were skipped. Nothing is ever followed through a link,
    so a link pointing out of the workspace stays a dangling-or-outside link in the copy.
    """
    skipped: list[str] = []
    dst.mkdir(parents=True, exist_ok=True)
    if not src.exists():
        return skipped
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(src)
        target_dir = dst / rel_dir
        target_dir.mkdir(parents=True, exist_ok=True)
        for name in list(dirnames):
            p = base / name
            if p.is_symlink():
                os.symlink(os.readlink(p), target_dir / name)
                dirnames.remove(name)
        for name in filenames:
            p = base / name
            rel = (rel_dir / name).as_posix()
            try:
                st = p.lstat()
            except OSError:
                skipped.append(rel)
                continue
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(p), target_dir / name)
            elif stat.S_ISREG(st.st_mode):
                try:
                    shutil.copyfile(p, target_dir / name, follow_symlinks=False)
                except OSError:
                    skipped.append(rel)
            else:
                skipped.append(rel)
    return skipped


__all__ = ["copy_snapshot"]
