"""Content digests: the glue of the evidence chain."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any, BinaryIO


CHUNK = 1 << 20
#: bytes a file is hashed in at once: under the allocator's mapping threshold (128 KiB), so a small
#: file (a marker, a result) costs one small allocation, not a mapped buffer (hashlib.file_digest's
#: 256 KiB one took twice as long as hashing a 47-byte marker: a trial folder has one or more)
PIECE = 1 << 16

#: the digest recorded for a file that was not read (over the reader's byte budget): unknown,
#: so it never equals a real digest and a comparison over it never says "unchanged"
UNHASHED = "unhashed:"
#: the digest recorded for an entry a walk could not take (too deep, too long, unlistable)
UNREADABLE = "unreadable"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_open(f: BinaryIO) -> str:
    """The SHA-256 of an open file's bytes from where it stands, read in pieces of :data:`PIECE`."""
    h = hashlib.sha256()
    while chunk := f.read(PIECE):
        h.update(chunk)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return sha256_open(f)


def sha256_untrusted(path: str | bytes, expect: os.stat_result | None = None) -> str | None:
    """sha256 of a file an agent wrote: opened without following a link or blocking on a FIFO,
    and only if it is still a regular file (the one ``expect`` described); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    h = hashlib.sha256()
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (expect is not None and (st.st_dev, st.st_ino) != (expect.st_dev, expect.st_ino)):
            return None
        left = st.st_size
        while left > 0 and (chunk := os.read(fd, min(left, CHUNK))):
            h.update(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    return h.hexdigest()


def workspace_hash_budget(disk_mb: int | None) -> int:
    """Bytes a reader of an agent's workspace digests: all an honest agent can write (its disk
    bound) plus 1 GiB for the task's own files. Only claimed size (sparse files, which cost
    their writer nothing) goes past it."""
    return (1 << 30) + ((disk_mb if disk_mb else 15 << 10) << 20)


def digest_smallest_first(files: Iterable[tuple[Any, str | bytes, os.stat_result]], budget: int) -> dict[Any, str]:
    """Digest ``(key, path, stat)`` files smallest first while ``budget`` bytes last; the rest
    (and any file swapped since its stat) are recorded as :data:`UNHASHED` with their size."""
    out: dict[Any, str] = {}
    for key, path, st in sorted(files, key=lambda f: f[2].st_size):
        digest = None
        if st.st_size <= budget:
            budget -= st.st_size
            digest = sha256_untrusted(path, st)
        out[key] = digest if digest is not None else f"{UNHASHED}{st.st_size}"
    return out


def canonical_json(value: Any) -> bytes:
    """Stable JSON bytes (sorted keys, no whitespace) so equal data has equal digests."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def sha256_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value))


def tree_digests(root: Path, *, follow_symlinks: bool = False, budget: int | None = None) -> dict[str, str]:
    """Digest of every regular file under ``root`` by relative POSIX path.

    Symbolic links are recorded as ``symlink:<target>`` and never followed, so a link that
    points out of the tree cannot make the digest read outside it. With a ``budget`` (a tree an
    agent wrote) files are read as :func:`digest_smallest_first` does.
    """
    out: dict[str, str] = {}
    if not root.exists():
        return out
    untrusted: list[tuple[str, bytes, os.stat_result]] = []
    if budget is not None:
        from assay.untrusted.tree import walk_untrusted  # here: a scan's reading process imports this module

        for raw, full, st in walk_untrusted(root):
            rel = text_name(raw)
            if st is None:
                out[rel] = UNREADABLE
            elif stat.S_ISLNK(st.st_mode):
                try:
                    out[rel] = "symlink:" + os.fsdecode(os.readlink(full))
                except OSError:
                    out[rel] = UNREADABLE
            elif stat.S_ISREG(st.st_mode):
                untrusted.append((rel, full, st))
    else:
        for p in walk_files(root):
            rel = text_name(p.relative_to(root).as_posix())
            if p.is_symlink() and not follow_symlinks:
                out[rel] = "symlink:" + os.readlink(p)
            elif p.is_file():
                out[rel] = sha256_file(p)
    out.update(digest_smallest_first(untrusted, budget or 0))
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
