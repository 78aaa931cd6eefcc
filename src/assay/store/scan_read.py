"""The reading half of a run scan: list a plain trial folder, read its files, hash them.

It holds no judgement (what is sealed, what is a problem: :mod:`assay.store.scan` decides) and
imports nothing but the standard library, :mod:`assay.spec.digest`,
:mod:`assay.records.pickled` and :mod:`assay.untrusted.numeral`, so a worker process of
:func:`read_trials` starts in a fraction of a second. Reading is where a scan spends most of its
time (the kernel's listing and opening of every folder and file, then hashing), so it is the part
spread over one process per core for a large run; the caller checks and parses what comes back,
in the order it asked.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterable, Iterator

from assay.records.pickled import positional_pickle
from assay.spec.digest import sha256_open
from assay.untrusted.numeral import decimal

#: names that must be regular files in a plain trial folder
EVIDENCE_NAMES = frozenset({"result.json", "started.json", "trace.jsonl"})
#: the trial's trace, at the top of its folder
TRACE = "trace.jsonl"
#: with worker processes: trial folders a worker reads per request, and requests in flight per worker
CHUNK, CHUNKS_AHEAD = 256, 4


@positional_pickle
@dataclass
class Loaded:
    """A plain trial folder as listed, each file read hashed, the result files' bytes kept."""

    tdir: str
    files: list[str]  # regular files, relative to tdir, sorted by path parts
    dirs: set[str]
    numbers: list[int]  # the numbered attempt folders, sorted
    results: dict[str, bytes]  # "attempts/N/result.json" -> its bytes
    digests: dict[str, str]  # file -> sha256 of the bytes read (every file with ``every``; the trace with a reader)
    extra: Any = None  # what the caller's trace reader (and load function) took from the same bytes


def plain_tree(tdir: str, *, known_plain: bool = False) -> tuple[list[str], set[str], list[str]] | None:
    """(regular files, folders, names in attempts/) under ``tdir``, as paths relative to it; None
    when the folder is a link or holds anything but folders and regular files, or cannot be read."""
    files: list[str] = []
    dirs: set[str] = set()
    attempts: list[str] = []
    try:
        if not known_plain and os.path.islink(tdir):
            return None
        stack = [""]
        while stack:
            sub = stack.pop()
            with os.scandir(os.path.join(tdir, sub) if sub else tdir) as it:
                for e in it:
                    rel = f"{sub}/{e.name}" if sub else e.name
                    if sub == "attempts":
                        attempts.append(e.name)
                    if e.is_dir(follow_symlinks=False):
                        if e.name in EVIDENCE_NAMES:
                            return None
                        dirs.add(rel)
                        stack.append(rel)
                    elif e.is_file(follow_symlinks=False):
                        files.append(rel)
                    else:
                        return None
    except OSError:
        return None
    files.sort(key=lambda f: f.split("/"))
    return files, dirs, attempts


def is_result(f: str) -> bool:
    """``attempts/<name>/result.json``."""
    parts = f.split("/")
    return len(parts) == 3 and parts[0] == "attempts" and parts[2] == "result.json"


def load_trial(root: str, tid: str, known_plain: bool, every: bool,
               read_trace: Callable[[BinaryIO], tuple[str, Any]] | None = None) -> Loaded | None:
    """Read one trial folder of ``root``'s trials/: its result files, and with ``every`` every other
    file too, each hashed. None sends the trial to the checker's path-by-path reading (a link, a
    special file, a folder named like evidence, or a folder that changed while it was read).
    ``read_trace`` reads the open trace (with ``every`` or not) and returns (its sha256, what it
    took from it: the :attr:`Loaded.extra`), so the caller parses the very bytes that were hashed."""
    if "/" in tid or tid in ("", ".", ".."):
        return None
    tdir = os.path.join(root, "trials", tid)
    tree = plain_tree(tdir, known_plain=known_plain)
    if tree is None:
        return None
    files, dirs, attempts_dir = tree
    numbers = sorted(n for n in map(decimal, attempts_dir) if n is not None)
    results: dict[str, bytes] = {}
    digests: dict[str, str] = {}
    extra = None
    try:
        for f in files:
            res = is_result(f)
            trace = read_trace is not None and f == TRACE
            if not (every or res or trace):
                continue
            with open(os.path.join(tdir, f), "rb") as fh:
                if res:
                    results[f] = data = fh.read()
                    digests[f] = hashlib.sha256(data).hexdigest()
                elif trace:
                    digests[f], extra = read_trace(fh)  # type: ignore[misc]
                else:  # a trace may be large: hashed as it is read, never held
                    digests[f] = sha256_open(fh)
    except OSError:
        return None
    return Loaded(tdir, files, dirs, numbers, results, digests, extra)


def load_chunk(root: str, items: list[tuple[str, bool]], every: bool) -> list[Loaded | None]:
    """:func:`load_trial` of each (trial id, known plain), in order: one request to a worker process."""
    return [load_trial(root, tid, plain, every) for tid, plain in items]


def read_trials(root: str, items: Iterable[tuple[str, bool] | None], *, every: bool, workers: int = 0,
                load: str = "assay.store.scan_read:load_chunk") -> Iterator[Loaded | None]:
    """:func:`load_trial` of each item (trial id, known plain; None: no folder to read, yields None)
    in the order given: here, or with ``workers`` > 1 by that many processes reading ahead
    (:mod:`assay.store.scan_workers`). A worker that dies (killed, out of memory) costs only
    speed: what it had not answered is read here.

    Reading ahead by threads was tried and dropped: on two cores the GIL's hand-offs doubled a
    scan's CPU time (a score of 10^4 trials: 3.9 s wall with four threads, 2.2 s read inline,
    1.8 s with two processes). ``load`` names :func:`load_chunk` (a test names one that fails)."""
    from assay.store.scan_workers import read_in_processes, resolve

    todo = iter(items)
    if workers > 1:
        yield from read_in_processes(root, todo, every, workers, load, CHUNK, CHUNKS_AHEAD)
    local = resolve(load)
    for item in todo:  # here, or what was left when a worker process failed
        yield None if item is None else local(root, [item], every)[0]


__all__ = ["EVIDENCE_NAMES", "TRACE", "Loaded", "is_result", "load_chunk", "load_trial", "plain_tree", "read_trials"]
