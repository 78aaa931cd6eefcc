"""The final state of an overlay workspace from its upper layer alone: the fixture's initial scan
(taken once per task) with what the attempt wrote laid over it, as the kernel lays it.

A walk of the merged view costs every fixture file; the upper holds only what the attempt wrote.
The upper is the agent's work, so it is read as hostile (the bounded walker, no link followed)
and read only in the forms this reader knows exactly: a whiteout (a ``0/0`` character device)
removes an entry and what it held, an opaque folder (``trusted.overlay.opaque=y``) hides the
fixture's entries under it, any other entry replaces what stood at its name. Anything else (a
redirected folder, a metacopy file, an entry the walk could not take, a budget the fixture's
hashes already spent) returns None, and the caller walks the merged view instead: the answer is
then the same, only slower. ``trusted.`` attributes are the kernel's: an agent cannot set them.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from dataclasses import dataclass

from assay.sandbox.overlay_ws import OverlayWorkspace
from assay.spec.digest import UNHASHED, digest_smallest_first, text_name
from assay.store.workspace_diff import Scan
from assay.untrusted.tree import MAX_ENTRIES, walk_untrusted

#: xattrs the kernel sets that do not change what the merged view holds
_HARMLESS = {b"trusted.overlay.origin", b"trusted.overlay.impure", b"trusted.overlay.opaque",
             b"trusted.overlay.nlink", b"trusted.overlay.uuid"}


def _overlay_xattrs(full: bytes) -> dict[bytes, bytes] | None:
    """The entry's ``trusted.overlay.*`` attributes (None: they cannot be read)."""
    try:
        names = os.listxattr(full, follow_symlinks=False)
    except OSError as e:
        return {} if e.errno in (errno.ENOTSUP, errno.EPERM) else None
    out: dict[bytes, bytes] = {}
    for n in names:
        if n.startswith("trusted.overlay."):
            try:
                out[n.encode()] = os.getxattr(full, n, follow_symlinks=False)
            except OSError:
                return None
    return out


def _drop_under(out: Scan, rel: bytes) -> list[bytes]:
    prefix = rel + b"/"
    gone = [k for k in out if k.startswith(prefix)]
    for k in gone:
        del out[k]
    return gone


def _folders(initial: Scan) -> set[bytes]:
    """Every folder the fixture's entries stand in."""
    out: set[bytes] = set()
    for k in initial:
        i = k.rfind(b"/")
        while i > 0 and k[:i] not in out:
            out.add(k[:i])
            i = k.rfind(b"/", 0, i)
    return out


@dataclass(frozen=True)
class _Facts:
    """What every trial over one task's initial scan would otherwise recompute over all its
    entries: whether it is complete, the folders its entries stand in, its files' bytes."""

    initial: Scan  # held, so the id it is kept under is never another scan's
    complete: bool
    folders: set[bytes]
    file_bytes: int


_FACTS: dict[int, _Facts] = {}
_FACTS_LOCK = threading.Lock()
_FACTS_KEPT = 16


def _facts(initial: Scan) -> _Facts:
    with _FACTS_LOCK:
        hit = _FACTS.get(id(initial))
    if hit is not None and hit.initial is initial:
        return hit
    complete = not any(kind != "symlink" and (kind != "file" or not digest) for kind, digest, _ in initial.values())
    made = _Facts(initial, complete, _folders(initial), sum(size for kind, _, size in initial.values() if kind == "file"))
    with _FACTS_LOCK:
        while len(_FACTS) >= _FACTS_KEPT:
            del _FACTS[next(iter(_FACTS))]
        _FACTS[id(initial)] = made
    return made


def delta_scan(ws: OverlayWorkspace, initial: Scan, budget: int) -> Scan | None:
    """The merged view's scan (as :func:`assay.store.workspace_diff.scan` would give it), or None
    where only a walk of the merged view can say."""
    got = delta(ws, initial, budget)
    return None if got is None else got[0]


def delta(ws: OverlayWorkspace, initial: Scan, budget: int) -> tuple[Scan, frozenset[bytes]] | None:
    """:func:`delta_scan` and the names whose entry it changed, added or removed: every other
    name holds the initial scan's own entry (complete, hashed), so a diff or digests need look
    at these alone. Costs the upper's entries, not the fixture's (its facts are kept per task)."""
    facts = _facts(initial)
    if not facts.complete:
        return None  # the initial scan itself is partial: a full walk decides what a later one sees
    upper: list[tuple[bytes, bytes, os.stat_result]] = []
    for rel, full, st in walk_untrusted(ws.upper, max_entries=MAX_ENTRIES):  # the agent's tree: bounded
        if st is None:
            return None
        upper.append((rel, full, st))
    out: Scan = dict(initial)
    folders = facts.folders
    files: list[tuple[bytes, bytes, os.stat_result]] = []
    added: Scan = {}
    touched: set[bytes] = set()
    removed_bytes = 0

    def remove(rel: bytes) -> None:
        nonlocal removed_bytes
        rec = out.pop(rel, None)
        if rec is not None:
            touched.add(rel)
            removed_bytes += rec[2] if rec[0] == "file" else 0

    def remove_under(rel: bytes) -> None:
        nonlocal removed_bytes
        for k in _drop_under(out, rel):
            touched.add(k)
            rec = initial[k]
            removed_bytes += rec[2] if rec[0] == "file" else 0
    for rel, full, st in upper:  # a folder before what it holds
        xattrs = _overlay_xattrs(full)
        if xattrs is None or any(k not in _HARMLESS for k in xattrs):
            return None  # a redirect, a metacopy, an xwhiteout: the kernel's rules, not ours
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            opaque = xattrs.get(b"trusted.overlay.opaque")
            if opaque not in (None, b"y"):
                return None
            remove(rel)  # a folder where the fixture had a file
            if opaque == b"y" and rel in folders:
                remove_under(rel)
            continue
        remove(rel)
        if rel in folders:
            remove_under(rel)  # a non-folder where the fixture had a folder
        if stat.S_ISCHR(mode) and st.st_rdev == 0:
            continue  # a whiteout: gone
        if stat.S_ISLNK(mode):
            try:
                added[rel] = ("symlink", text_name(os.readlink(full)), 0)
            except OSError:
                return None
        elif stat.S_ISREG(mode):
            files.append((rel, full, st))
        else:
            added[rel] = ("special", "", 0)
    left = budget - (facts.file_bytes - removed_bytes)
    if sum(st.st_size for _, _, st in files) > left:
        return None  # a full walk would hash smallest first across both: let it
    sizes = {rel: st.st_size for rel, _, st in files}
    for rel, digest in digest_smallest_first(files, left).items():
        if digest.startswith(UNHASHED):
            return None  # swapped while read
        added[rel] = ("file", digest, sizes[rel])
    out.update(added)
    return out, frozenset(touched | added.keys())


__all__ = ["delta", "delta_scan"]
