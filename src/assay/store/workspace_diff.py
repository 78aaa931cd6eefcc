"""The final state as evidence: what an attempt added, changed and deleted in its workspace.

Built by the harness after the agent's sandbox is gone, from a workspace the agent wrote and
that is therefore hostile: nothing is followed (a symlink is recorded with its target, never
read through), special files are recorded by type only, names that are not UTF-8 are kept
byte-exact (base64) and shown escaped, and everything is bounded (entries, bytes per file,
bytes in all) with every truncation recorded. Stored as one ``.tar.zst`` artifact
(``workspace.diff``): ``diff.json`` (the index) plus ``after/N`` and ``before/N`` contents.
"""

from __future__ import annotations

import base64
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from assay.spec.budget import Limits
from assay.spec.digest import UNHASHED, digest_smallest_first, sha256_bytes, text_name, workspace_hash_budget
from assay.untrusted.archive import read_tar_zst, write_tar_zst
from assay.untrusted.tree import MAX_ENTRIES, OVERFLOW, walk_untrusted

ARTIFACT_NAME = "workspace.diff"
#: the entry a bounded walk of the final workspace ends with, as the diff names it
WALK_BOUND = text_name(OVERFLOW)
INDEX = "diff.json"
FORMAT = "assay-workspace-diff/1"


#: raw relative name -> (type, sha256 or link target, size), as :func:`scan` returns it; a file
#: whose digest is ``""`` was not hashed (over the scan's budget): unknown, never "unchanged"
Scan = dict[bytes, tuple[str, str, int]]

#: bytes one scan reads to digest files (by their claimed size: a sparse file costs its writer
#: nothing, so a budget on what is read is the only bound on the harness's time)
HASH_BUDGET = workspace_hash_budget(Limits().disk_mb)  # the default disk bound's


@dataclass(frozen=True)
class DiffLimits:
    max_entries: int = 5000
    max_file_bytes: int = 1 << 20
    max_total_bytes: int = 16 << 20


@dataclass
class WorkspaceDiff:
    """A read-back diff: the index entries and the stored contents by member name."""

    entries: list[dict[str, Any]]
    truncated: bool
    omitted_entries: int
    limits: dict[str, int]
    contents: dict[str, bytes] = field(default_factory=dict)
    #: the entries past ``max_entries``: path and status only, for the rules that read a name
    #: (none before this was kept: an older diff's omitted entries are only counted)
    omitted: list[dict[str, Any]] = field(default_factory=list)

    @property
    def walk_bounded(self) -> bool:
        """The final workspace's walk stopped at its bound (entries or time): the rest was never read."""
        return any(e.get("path") == WALK_BOUND for e in self.entries)

    def content(self, entry: dict[str, Any], side: str = "after") -> bytes | None:
        ref = entry.get(f"{side}_content")
        return self.contents.get(ref) if ref else None


def scan(root: Path, *, hash_budget: int = HASH_BUDGET, max_entries: int | None = MAX_ENTRIES) -> Scan:
    """Raw relative name -> (type, digest or link target, size) for every non-directory entry.

    Files are digested smallest first until ``hash_budget`` bytes are used; the rest keep an
    empty digest (recorded as not hashed). ``max_entries``: the walk's bound (None only for a
    task's own fixture, never for a tree an agent wrote)."""
    out: Scan = {}
    if not root.is_dir():
        return out
    files: list[tuple[bytes, bytes, os.stat_result]] = []
    for rel, full, st in walk_untrusted(root, max_entries=max_entries):
        if st is None:
            out[rel] = ("unreadable", "", 0)  # too deep, too long or unlistable: never "unchanged"
        elif stat.S_ISLNK(st.st_mode):
            try:
                out[rel] = ("symlink", text_name(os.readlink(full)), 0)
            except OSError:
                out[rel] = ("unreadable", "", 0)
        elif stat.S_ISREG(st.st_mode):
            files.append((rel, full, st))
        elif not stat.S_ISDIR(st.st_mode):
            out[rel] = ("special", "", 0)
    sizes = {rel: st.st_size for rel, _, st in files}
    for rel, digest in digest_smallest_first(files, hash_budget).items():
        out[rel] = ("file", "" if digest.startswith(UNHASHED) else digest, sizes[rel])
    return out


def build_workspace_diff(final: Path, initial: Scan, *, before: Path | None = None,
                         redact: Callable[[bytes], bytes] | None = None,
                         limits: DiffLimits = DiffLimits(), hash_budget: int = HASH_BUDGET,
                         now: Scan | None = None, changed: frozenset[bytes] | None = None) -> bytes:
    """The diff of ``final`` against the ``initial`` scan, as a compressed archive.

    ``before`` is a folder holding the initial contents (read only where its file still has
    the initial digest, so a changed file can be shown as a line diff). ``redact`` runs over
    every stored content (law 8); digests are always of the real bytes. ``now``: the scan of
    ``final`` already taken (the harness walks a final state once); ``changed``: the only names
    whose entry in ``now`` may differ from a complete, hashed one in ``initial`` (an overlay's
    upper says so, :func:`assay.run.workspace_delta.delta`), so the fixture's other names are
    not visited.
    """
    if now is None:
        now = scan(final, hash_budget=hash_budget)
    names = sorted(changed) if changed is not None else sorted(set(initial) | set(now))
    entries: list[dict[str, Any]] = []
    members: list[tuple[str, bytes, int]] = []
    budget = limits.max_total_bytes
    omitted = 0
    omitted_names: list[dict[str, Any]] = []
    truncated = False
    for raw in names:
        a, b = initial.get(raw), now.get(raw)
        if a == b and not (a is not None and (a[0] == "unreadable" or (a[0] == "file" and not a[1]))):
            continue
        status = "added" if a is None else "deleted" if b is None else "changed"
        if len(entries) >= limits.max_entries:  # its name kept all the same: the screen's name rules read it
            omitted += 1
            if len(omitted_names) < MAX_ENTRIES:  # as many as one walk of a final state takes
                omitted_names.append(_named(raw, status))
            continue
        entry: dict[str, Any] = {**_named(raw, status), "before": _describe(a), "after": _describe(b)}
        for side, root, rec in (("after", final, b), ("before", before, a)):
            if rec is None or rec[0] != "file" or root is None:
                continue
            data, cut, budget = _read_capped(root, raw, rec, limits, budget)
            if data is None:
                continue
            if redact is not None:
                red = redact(data)
                entry["redacted"] = entry.get("redacted", False) or red != data
                data = red
            if cut:
                entry[f"{side}_truncated"] = True
                truncated = True
            name = f"{side}/{len(members)}"
            members.append((name, data, 0o644))
            entry[f"{side}_content"] = name
        entries.append(entry)
    truncated = truncated or omitted > 0
    index = {"format": FORMAT, "entries": entries, "truncated": truncated, "omitted_entries": omitted,
             "omitted": omitted_names, "limits": {"max_entries": limits.max_entries, "max_file_bytes": limits.max_file_bytes,
                        "max_total_bytes": limits.max_total_bytes}}
    return write_tar_zst([(INDEX, json.dumps(index, ensure_ascii=True, sort_keys=True).encode(), 0o644), *members])


def read_workspace_diff(data: bytes) -> WorkspaceDiff:
    """Read a diff artifact back (raises :class:`~assay.untrusted.archive.ArchiveError` or ValueError)."""
    files = read_tar_zst(data)
    index = json.loads(files.pop(INDEX))
    if index.get("format") != FORMAT:
        raise ValueError(f"not a workspace diff (format {index.get('format')!r})")
    omitted = index.get("omitted", [])
    if not isinstance(omitted, list) or not all(isinstance(e, dict) for e in omitted):
        raise ValueError("not a workspace diff (its omitted entries are not a list of entries)")
    return WorkspaceDiff(index["entries"], bool(index["truncated"]), int(index["omitted_entries"]), index["limits"],
                         files, omitted)


def _named(raw: bytes, status: str) -> dict[str, Any]:
    """An entry's path (escaped as text, and its bytes where they are not UTF-8) and status."""
    entry: dict[str, Any] = {"path": text_name(raw), "status": status}
    if raw.decode("utf-8", "replace").encode() != raw:
        entry["path_b64"] = base64.b64encode(raw).decode()
    return entry


def _describe(rec: tuple[str, str, int] | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    kind, value, size = rec
    if kind == "file":
        return {"type": "file", "sha256": value, "size": size} if value else \
            {"type": "file", "sha256": None, "size": size, "not_hashed": True}
    if kind == "symlink":
        return {"type": "symlink", "target": value}
    return {"type": kind}


def _read_capped(root: Path, raw: bytes, rec: tuple[str, str, int], limits: DiffLimits,
                 budget: int) -> tuple[bytes | None, bool, int]:
    """Up to the per-file and remaining total bytes of one file, never through a link."""
    want = min(rec[2], limits.max_file_bytes, budget)
    if want <= 0 and rec[2] > 0:
        return b"", True, budget
    path = os.path.join(os.fsencode(root), raw)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, False, budget
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size != rec[2]:
            return None, False, budget  # not the file that was scanned (e.g. setup changed the fixture)
        data = os.read(fd, want) if want else b""
    finally:
        os.close(fd)
    if rec[1] and len(data) == rec[2] and sha256_bytes(data) != rec[1]:
        return None, False, budget
    return data, rec[2] > len(data), budget - len(data)
