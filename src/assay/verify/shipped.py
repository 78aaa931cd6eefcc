"""A final workspace as data, to be verified on another node (a verifier pod of its own identity).

:func:`pack_tree` reads the agent's final tree the way :func:`~assay.verify.snapshot.copy_snapshot`
copies it (folders, regular files, symlinks as links, nothing followed, FIFOs/sockets/devices
skipped and named), bounded in entries and bytes. :func:`unpack_tree` writes it back into a fresh
folder on the verifier's node, defensively: the pack crossed the network, so a name that climbs
out (``..``, an absolute path), a member under something that is not a folder it made, or a
second member of the same name is refused, never written through. The verifier then sees the
very tree it would have seen on the attempt's own node.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from assay.untrusted.tree import MAX_ENTRIES, walk_untrusted
from assay.verify.snapshot import text_name

DIR, FILE, LINK = "d", "f", "l"


class ShippedTreeError(ValueError):
    """A pack that cannot be a tree this module made (or one past its bounds)."""


@dataclass(frozen=True)
class ShippedTree:
    """Entries in walk order (a folder before what it holds): (relative name, kind, payload),
    the payload being a file's bytes or a link's target; ``skipped`` as copy_snapshot names them."""

    entries: tuple[tuple[bytes, str, bytes], ...]
    skipped: tuple[str, ...] = field(default_factory=tuple)

    @property
    def size(self) -> int:
        return sum(len(p) for _, _, p in self.entries)


def pack_tree(src: Path, *, max_bytes: int, max_entries: int = MAX_ENTRIES) -> ShippedTree:
    """The tree under ``src`` as data; raises :class:`ShippedTreeError` past ``max_bytes``."""
    entries: list[tuple[bytes, str, bytes]] = []
    skipped: list[str] = []
    total = 0
    if not src.exists():
        return ShippedTree(())
    for rel, full, st in walk_untrusted(src, max_entries=max_entries):
        try:
            if st is None:
                raise OSError(errno.ENOENT, "not taken", full)
            if stat.S_ISDIR(st.st_mode):
                entries.append((rel, DIR, b""))
            elif stat.S_ISLNK(st.st_mode):
                entries.append((rel, LINK, os.readlink(full)))
            elif stat.S_ISREG(st.st_mode):
                data = _read_regular(full)
                total += len(data)
                if total > max_bytes:
                    raise ShippedTreeError(f"the final workspace holds more than {max_bytes} bytes to ship")
                entries.append((rel, FILE, data))
            else:
                raise OSError(errno.EINVAL, "not a file, folder or link", full)
        except OSError:
            skipped.append(text_name(rel))
    return ShippedTree(tuple(entries), tuple(skipped))


def _read_regular(path: bytes) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read()
    finally:
        os.close(fd)


def unpack_tree(tree: ShippedTree, dst: Path, *, max_bytes: int) -> list[str]:
    """Write ``tree`` into ``dst`` (which must not exist); returns the skipped names."""
    if tree.size > max_bytes:
        raise ShippedTreeError(f"a shipped workspace of {tree.size} bytes is over the bound of {max_bytes}")
    dst.mkdir(parents=True)
    root = os.fsencode(dst)
    folders: set[bytes] = {b""}
    seen: set[bytes] = set()
    for rel, kind, payload in tree.entries:
        parts = rel.split(b"/")
        if not rel or rel.startswith(b"/") or any(p in (b"", b".", b"..") for p in parts):
            raise ShippedTreeError(f"a shipped name that is not a plain relative path: {text_name(rel)!r}")
        if rel in seen:
            raise ShippedTreeError(f"a shipped name given twice: {text_name(rel)!r}")
        seen.add(rel)
        parent = b"/".join(parts[:-1])
        if parent not in folders:  # under a link, a file or nothing it made: never written through
            raise ShippedTreeError(f"{text_name(rel)!r} is not under a folder of the shipped tree")
        target = os.path.join(root, rel)
        if kind == DIR:
            os.mkdir(target, 0o755)
            folders.add(rel)
        elif kind == LINK:
            os.symlink(payload, target)
        elif kind == FILE:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            with os.fdopen(fd, "wb") as f:
                f.write(payload)
        else:
            raise ShippedTreeError(f"an entry of unknown kind {kind!r}: {text_name(rel)!r}")
    return list(tree.skipped)
