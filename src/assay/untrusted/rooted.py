"""Paths resolved inside a root folder as that root's own system would resolve them: a link is
followed inside the root (an absolute target starts at the root, ``..`` stops at it), never on
the host. A task's build context and an image's stages are written by whoever wrote the task, so
a link there (``/out/s -> /etc/shadow``) names the root's own file, or nothing."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

#: link hops followed while resolving one path (the kernel's own bound)
_HOPS = 40


def resolve_in(root: Path, path: str) -> Path | None:
    """``path`` resolved inside ``root`` as if ``root`` were ``/`` (links followed there, ``..``
    stopping at it); None when it does not exist there or its links loop."""
    todo = [p for p in path.split("/") if p not in ("", ".")]
    done: list[str] = []
    hops = 0
    while todo:
        part = todo.pop(0)
        if part == "..":
            done = done[:-1]
            continue
        here = root.joinpath(*done, part)
        if here.is_symlink():
            hops += 1
            if hops > _HOPS:
                return None
            target = os.readlink(here)
            if target.startswith("/"):
                done = []
            todo = [p for p in target.split("/") if p not in ("", ".")] + todo
            continue
        done.append(part)
    found = root.joinpath(*done)
    return found if found.exists() and not found.is_symlink() else None


def matches(root: Path, src: str) -> list[Path]:
    """What ``src`` names in ``root``: one path, or what a glob in its last part matches (sorted)."""
    parent, _, last = src.rstrip("/").rpartition("/")
    if not any(c in last for c in "*?["):
        found = resolve_in(root, src)
        return [found] if found is not None else []
    folder = resolve_in(root, parent or "/")
    if folder is None or not folder.is_dir():
        return []
    return sorted(found for p in folder.iterdir() if fnmatch.fnmatchcase(p.name, last)
                  and (found := resolve_in(folder, p.name)) is not None)
