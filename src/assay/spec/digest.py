"""Content digests: the glue of the evidence chain."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def canonical_json(value: Any) -> bytes:
    """Stable JSON bytes (sorted keys, no whitespace) so equal data has equal digests."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def sha256_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value))


def tree_digests(root: Path, *, follow_symlinks: bool = False) -> dict[str, str]:
    """Digest of every regular file under ``root`` by relative POSIX path.

    Symbolic links are recorded as ``symlink:<target>`` and never followed, so a link that
    points out of the tree cannot make the digest read outside it.
    """
    out: dict[str, str] = {}
    if not root.exists():
        return out
    for p in walk_files(root):
        rel = text_name(p.relative_to(root).as_posix())
        if p.is_symlink() and not follow_symlinks:
            out[rel] = "symlink:" + os.readlink(p)
        elif p.is_file():
            out[rel] = sha256_file(p)
    return dict(sorted(out.items()))


def text_name(name: str | bytes) -> str:
    """A file name as JSON-safe text: UTF-8 as it is, any other byte escaped (``\\xff``).

    Agents can write names that are not UTF-8; they must still be recorded, digested and shown
    (an unencodable name would otherwise crash the result writer and lose the incident)."""
    raw = name if isinstance(name, bytes) else os.fsencode(name)
    return raw.decode("utf-8", "backslashreplace")


def walk_files(root: Path) -> list[Path]:
    """Every non-directory entry under ``root`` (symlinks included, never descended into)."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for d in list(dirnames):
            if (base / d).is_symlink():
                found.append(base / d)
        found.extend(base / f for f in filenames)
    return sorted(found)


def tree_digest(digests: dict[str, str]) -> str:
    """One digest for a whole tree, from its per-file digests."""
    return sha256_json(digests)
