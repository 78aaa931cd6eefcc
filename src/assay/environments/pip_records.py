"""The base's Python packages made replaceable by pip, as in Python's own images.

The base carries Debian's pytest (and what it needs) for the verifier. Python's images carry none,
so a task's ``pip install pytest==8.4.1`` there replaces nothing; here pip must first uninstall
Debian's, and a Debian package has no RECORD (the list of its files pip uninstalls by), so the
build stopped with "uninstall-no-record-file". Each ``*.dist-info`` Debian installed without one
gets a RECORD from dpkg's own list of that package's files, so pip replaces it as it replaces what
pip installed. A package that holds several distributions is left as it is (whose file is whose
is not known).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: where Debian installs Python packages, inside the image
SITE = "/usr/lib/python3/dist-packages"
DPKG_INFO = "var/lib/dpkg/info"


def _kept(rootfs: Path, path: str) -> bool:
    """A file or link of the image (never a folder), read without following a link."""
    try:
        mode = os.lstat(rootfs / path.lstrip("/")).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def write_records(rootfs: Path) -> list[str]:
    """Write a RECORD into each Debian-installed ``*.dist-info`` of ``rootfs`` that lacks one;
    returns the distributions given one, sorted. Only for a base this builder just made from
    Debian's packages (its paths are the packages' own)."""
    site = rootfs / SITE.lstrip("/")
    if not site.is_dir() or site.is_symlink():
        return []
    missing = {f"{SITE}/{d.name}": d for d in sorted(site.iterdir())
               if d.name.endswith(".dist-info") and d.is_dir() and not d.is_symlink() and not (d / "RECORD").exists()}
    done: list[str] = []
    info = rootfs / DPKG_INFO
    for listing in sorted(info.glob("*.list")) if missing else []:
        lines = listing.read_text(errors="replace").splitlines()
        mine = [p for p in lines if p in missing]
        if len(mine) != 1:
            continue  # not a Python package, or several distributions in one package
        dist = missing.pop(mine[0])
        files = [p for p in lines if p.startswith((SITE + "/", "/usr/bin/")) and _kept(rootfs, p)]
        rows = [f"{os.path.relpath(p, SITE)},," for p in files] + [f"{dist.name}/RECORD,,"]
        (dist / "RECORD").write_text("\n".join(rows) + "\n")
        done.append(dist.name)
    return sorted(done)
