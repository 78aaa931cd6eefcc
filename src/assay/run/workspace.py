"""An attempt's workspace as the harness handles it: made from the task's fixture, its initial
state taken from the task (walked once per task, not per trial), its final state walked once.

Per trial the harness used to copy the fixture in, walk the copy twice (a scan for the diff, a
digest walk for the verifier), copy the final state for the verifier and walk that copy too.
Now: one copy in, no walk of the initial state unless a setup script ran (then one), one walk of
the final state (its scan gives the diff and the verifier's digests alike), and the verifier
reads the final workspace in place once the agent's sandbox is gone (:func:`run_verifier`'s
``final_digests``). What the agent wrote is still read only through the hostile-tree walker.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from assay.sandbox import overlay_ws
from assay.spec.digest import UNHASHED, UNREADABLE
from assay.spec.task_env import make_empty_dirs
from assay.run.workspace_delta import delta
from assay.store.workspace_diff import Scan, scan
from assay.untrusted.tree import MAX_ENTRIES
from assay.verify.snapshot import copy_snapshot


@dataclass(frozen=True)
class State:
    """A workspace's state: the scan (for the diff) and the digests (for the verifier), of one walk."""

    scan: Scan
    digests: dict[str, str]
    #: over an overlay, the only names whose entry differs from the initial scan's (None: unknown)
    changed: frozenset[bytes] | None = field(default=None, compare=False)

    @property
    def unreadable(self) -> list[str]:
        """Entries the walk could not take, or that are neither file, folder nor link."""
        return sorted(k for k, v in self.digests.items() if v == UNREADABLE)


def digests_of(s: Scan) -> dict[str, str]:
    """The verifier's digests (``tree_digests`` form) from a scan: never a second walk."""
    out: dict[str, str] = {}
    for raw, rec in s.items():
        out[raw.decode("utf-8", "backslashreplace")] = _digest(rec)
    return dict(sorted(out.items()))


def _digest(rec: tuple[str, str, int]) -> str:
    kind, digest, size = rec
    if kind == "file":
        return digest or f"{UNHASHED}{size}"
    if kind == "symlink":
        return "symlink:" + digest
    return UNREADABLE  # unreadable, or a FIFO/socket/device: unknown, never "unchanged"


#: the initial scan's digests, once per task (the scan held so its id is never another's)
_INITIAL_DIGESTS: dict[int, tuple[Scan, dict[str, str] | None]] = {}


def _utf8(names: object) -> bool:
    try:
        for n in names:  # type: ignore[attr-defined]
            n.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _patched(initial: Scan, now: Scan, changed: frozenset[bytes]) -> dict[str, str]:
    """``digests_of(now)`` from the initial scan's digests and the changed names alone, where
    every name is UTF-8 (then no two names decode alike); else computed whole."""
    with _LOCK:
        hit = _INITIAL_DIGESTS.get(id(initial))
    if hit is None or hit[0] is not initial:
        hit = (initial, digests_of(initial) if _utf8(initial) else None)
        with _LOCK:
            while len(_INITIAL_DIGESTS) >= 16:
                del _INITIAL_DIGESTS[next(iter(_INITIAL_DIGESTS))]
            _INITIAL_DIGESTS[id(initial)] = hit
    if hit[1] is None or not _utf8(changed):
        return digests_of(now)
    out = dict(hit[1])
    grew = False
    for raw in changed:
        name = raw.decode("utf-8")
        rec = now.get(raw)
        if rec is None:
            out.pop(name, None)
        else:
            grew = grew or name not in out
            out[name] = _digest(rec)
    return dict(sorted(out.items())) if grew else out


def state_of(root: Path, budget: int, *, max_entries: int | None = MAX_ENTRIES) -> State:
    """One walk of ``root`` (hostile: read as :func:`scan` reads it)."""
    s = scan(root, hash_budget=budget, max_entries=max_entries)
    return State(s, digests_of(s))


def final_state(live: Path, initial: Scan, budget: int) -> State:
    """The final workspace's one reading: an overlay's from its upper over the task's initial scan
    (:mod:`assay.run.workspace_delta`, no walk of the fixture's files) where that reader can say
    exactly, else one walk of the merged view."""
    ws = overlay_ws.get(live)
    got = delta(ws, initial, budget) if ws is not None else None
    if got is None:
        return state_of(live, budget)
    now, changed = got
    return State(now, _patched(initial, now, changed), changed)


_CACHE: dict[tuple[str, str, int, bool], State] = {}
_LOCK = threading.Lock()


def make_workspace(fixture: Path, dst: Path, empty_dirs: list[str]) -> bool:
    """A fresh workspace holding the task's fixture with its declared empty folders: an overlay
    over the fixture (layers beside ``dst``, :mod:`assay.sandbox.overlay_ws`) where the kernel
    allows one, else a copy. True when it is an overlay (:func:`release_workspace` unmounts it)."""
    overlaid = overlay_ws.create(fixture, dst, dst.parent / (dst.name + ".layers")) is not None
    if not overlaid:
        copy_snapshot(fixture, dst)
    make_empty_dirs(dst, empty_dirs)
    return overlaid


def release_workspace(dst: Path) -> None:
    """Unmount an overlay workspace (ours, or one a crashed harness left) before its scratch is
    removed; nothing for a copied one."""
    overlay_ws.release(dst)


def initial_state(fixture: Path, live: Path, key: str, *, setup_ran: bool, budget: int,
                  cache: dict[tuple[str, str, int, bool], State] | None = None) -> State:
    """The workspace's state before the agent. Without a setup script it is the fixture's (the
    copy holds exactly its files: entries it could not copy are refused when the task loads), so
    it is walked once per task (``key``: the task's digest) and reused by every trial; after a
    setup script the live workspace is walked."""
    if setup_ran:
        return state_of(live, budget)
    # over an overlay the fixture is read whole (the task's files, not the agent's): the final
    # state is then exact from the upper alone, whatever the fixture's size
    whole = overlay_ws.get(live) is not None
    store = _CACHE if cache is None else cache
    k = (str(fixture), key, budget, whole)
    with _LOCK:
        hit = store.get(k)
    if hit is None:
        hit = state_of(fixture, budget, max_entries=None if whole else MAX_ENTRIES)
        with _LOCK:
            store[k] = hit
    return hit


__all__ = ["State", "digests_of", "final_state", "initial_state", "make_workspace", "release_workspace", "state_of"]
