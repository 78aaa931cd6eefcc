"""Harbor's content digests: a ``dataset.toml`` pins each task (``[[tasks]]`` name = the task's
``[task].name``, digest = ``sha256:<hex>``), and a task's digest is Harbor's package hash: the
sha256 over ``"<path>\\0<sha256 of the file>\\n"`` for each of its files in path order
(``task.toml``, ``instruction.md``, ``README.md``, ``trajectory.json`` and everything under
``environment/``, ``tests/``, ``solution/``, ``steps/``; Harbor's default ignores left out)."""

from __future__ import annotations

import fnmatch
import hashlib
import re
import tomllib
from pathlib import Path

MANIFEST = "dataset.toml"
SINGLE_FILES = ("task.toml", "instruction.md", "README.md", "trajectory.json")
FOLDERS = ("environment", "tests", "solution", "steps")
#: Harbor's ignores when a task has no .gitignore of its own
DEFAULT_IGNORES = ("*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")
IGNORED_DIRS = ("__pycache__",)
DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")


class DigestError(Exception):
    """A dataset.toml that cannot be read (every task is refused with this)."""


def find_manifest(src: Path) -> Path | None:
    """``dataset.toml`` in ``src`` (a dataset folder) or beside it (``src`` one task of it)."""
    for d in (src, src.parent):
        if (d / MANIFEST).is_file():
            return d / MANIFEST
    return None


def pinned(manifest: Path) -> dict[str, str]:
    """Task name -> pinned digest; DigestError for a malformed file or entry."""
    try:
        doc = tomllib.loads(manifest.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise DigestError(f"{manifest}: not valid TOML ({e})") from e
    out: dict[str, str] = {}
    for n, t in enumerate(doc.get("tasks") or [], 1):
        name, digest = (t.get("name"), t.get("digest")) if isinstance(t, dict) else (None, None)
        if not isinstance(name, str) or not isinstance(digest, str) or not DIGEST.match(digest):
            raise DigestError(f"{manifest}: [[tasks]] entry {n} needs name = 'org/name' and digest = 'sha256:<64 hex>'")
        if out.get(name, digest) != digest:
            raise DigestError(f"{manifest}: task {name!r} is pinned to two digests")
        out[name] = digest
    return out


def _ignored(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in IGNORED_DIRS for p in parts[:-1]) or any(fnmatch.fnmatchcase(parts[-1], g) for g in DEFAULT_IGNORES)


def content_digest(task_dir: Path) -> str | None:
    """The task's Harbor content digest (``sha256:<hex>``); None when the task has ignore rules
    of its own (``.gitignore``, ``.harborignore``), which this reader does not apply."""
    if (task_dir / ".gitignore").exists() or any(task_dir.rglob(".harborignore")):
        return None
    files = [name for name in SINGLE_FILES if (task_dir / name).is_file()]
    for folder in FOLDERS:
        base = task_dir / folder
        if base.is_dir():
            files += _walk(task_dir, base)
    outer = hashlib.sha256()
    for rel in sorted(f for f in files if not _ignored(f)):
        outer.update(f"{rel}\0{hashlib.sha256((task_dir / rel).read_bytes()).hexdigest()}\n".encode())
    return f"sha256:{outer.hexdigest()}"


def _walk(root: Path, d: Path) -> list[str]:
    """Files under ``d`` as Harbor selects them: links to files kept, linked folders not entered."""
    out: list[str] = []
    for p in sorted(d.iterdir()):
        if p.is_dir() and not p.is_symlink():
            out += _walk(root, p)
        elif p.is_file():
            out.append(p.relative_to(root).as_posix())
    return out
