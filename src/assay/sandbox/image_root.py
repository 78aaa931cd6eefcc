"""A sandbox's root made of a task's image instead of the host's system, as bwrap arguments.

Every top-level entry of the image's root filesystem is bound read-only at its own path, except
where the harness must make a path of its own (the workspace, the mounts, the harness's Python
install bound for the machinery): there the folder is made on bwrap's root and its entries are
bound one by one, down to the harness's path, so nothing of the image is hidden beside it.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

#: made by bwrap itself in every sandbox: never taken from an image
OWN = ("/proc", "/dev", "/tmp", "/sys")


@dataclass(frozen=True)
class ImageRoot:
    """A built image a sandbox runs over: its read-only root filesystem and its runtime facts."""

    rootfs: Path
    digest: str
    env: tuple[tuple[str, str], ...] = ()
    user: str | None = None
    #: where the workspace appears (the image's WORKDIR); None: the sandbox's default
    workdir: str | None = None
    deviations: tuple[str, ...] = field(default_factory=tuple)


def _entry_args(host: Path, inside: str, st: os.stat_result) -> list[str]:
    if stat.S_ISLNK(st.st_mode):
        return ["--symlink", os.readlink(host), inside]
    if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):
        return ["--ro-bind", str(host), inside]
    return []  # a device or socket in the image: never bound


def _walk(host_dir: Path, inside_dir: str, keep: tuple[str, ...], made: set[str]) -> list[str]:
    args: list[str] = []
    try:
        names = sorted(os.listdir(host_dir))
    except OSError:
        return args
    for name in names:
        inside = f"{inside_dir.rstrip('/')}/{name}"
        host = host_dir / name
        try:
            st = os.lstat(host)
        except OSError:
            continue
        under = [k for k in keep if k == inside or k.startswith(inside + "/")]
        if not under:
            args += _entry_args(host, inside, st)
        elif inside not in keep and stat.S_ISDIR(st.st_mode):
            args += ["--perms", f"{stat.S_IMODE(st.st_mode) | 0o755:04o}", "--dir", inside]
            made.add(inside)
            args += _walk(host, inside, keep, made)
        # else: the harness's own path (or a file or link in its way) takes the place
    return args


@functools.lru_cache(maxsize=32)
def image_args(rootfs: Path, keep: tuple[str, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """bwrap arguments building a root from ``rootfs`` around the paths in ``keep``, and the
    folders they make (the same for every sandbox of a task: cached)."""
    made: set[str] = {"/"}
    args = _walk(rootfs, "/", tuple(sorted({*keep, *OWN})), made)
    return tuple(args), frozenset(made)
