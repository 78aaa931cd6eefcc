"""How `assay lint` reads a task's files: every regular file under a folder (walked without
following links: task folders may hold what an importer copied from anywhere), and the head of
one file as text."""

from __future__ import annotations

import os
from pathlib import Path

from assay.untrusted.tree import walk_untrusted

#: bytes of one file read when searching
MAX_READ = 1 << 20


def read_head(path: Path) -> str:
    """The first :data:`MAX_READ` bytes of ``path`` as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            return f.read(MAX_READ).decode("utf-8", "replace")
    except OSError:
        return ""


def files(root: Path) -> list[tuple[str, Path]]:
    """(relative path, full path) of every regular file under ``root``, ``.git`` folders left out."""
    if not root.is_dir():
        return []
    out = []
    for raw, full, st in walk_untrusted(root):
        if st is not None and os.path.isfile(full) and not os.path.islink(full) and b"/.git/" not in b"/" + raw + b"/":
            out.append((os.fsdecode(raw), Path(os.fsdecode(full))))
    return out
