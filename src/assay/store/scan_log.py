"""The results log as a run scan reads it: one trial's lines, each attempt's first, held to the
ledger. Kept apart from :mod:`assay.store.scan`, which reads trial folders, so each stays one job:
the scan looks a trial's lines up once and hands them here, which reads and hashes each attempt's
first line and keeps the digest of each it checked;
once every trial was read, :func:`check_seals` holds each marked line to the seal the ledger gave it
(:mod:`assay.store.log_seals`, matched where the log was indexed)."""

from __future__ import annotations

from hashlib import sha256
from typing import Any, Callable

from assay.store.log_seals import LogSeals
from assay.store.results_log import LOG, LogIndex, key_parts, log_key

#: the order of the checks, as the scan sorts its problems (store/scan.py, store/scan_rest.py)
SEALED, UNSEALED = 1, 2


class CheckedLines:
    """The first lines a scan checked, each with the SHA-256 of the very bytes it read and parsed
    (never the bytes the index saw when it was built: a line changed in between is held to its seal
    as it was parsed)."""

    def __init__(self, n: int = 0) -> None:
        self.marks = bytearray(n)  # per entry of the log: checked as its attempt's first line
        self.digests = bytearray(32 * n)

    def add(self, i: int, digest: bytes) -> None:
        if i >= len(self.marks):  # indexed since: a reader of the same RunDir refreshed the log
            grow = i + 1 - len(self.marks)
            self.marks.extend(bytes(grow))
            self.digests.extend(bytes(32 * grow))
        self.marks[i] = 1
        self.digests[32 * i: 32 * i + 32] = digest


def first_lines(log: LogIndex, tid: str, entries: list[int], *, check: bool, checked: CheckedLines,
                problem: Callable[[tuple[Any, ...], str], None]) -> list[tuple[int, int, str, bytes, str]]:
    """(attempt, entry, ledger key, bytes, SHA-256) of each attempt's first line, in the order of the
    attempts, each line read once and hashed as read. With ``check``, a line that repeats an attempt
    is a problem (a repeat is never read: the first line of an attempt is its result), and each
    first line goes into ``checked`` with its digest, to be held to its seal by :func:`check_seals`."""
    out: list[tuple[int, int, str, bytes, str]] = []
    taken: set[int] = set()
    for i in entries:
        n = log.attempt(i)
        if n in taken:
            if check:
                at = log.offset(i)
                problem((UNSEALED, tid, (LOG, str(n), str(at))),
                        f"{LOG}: byte {at}: a second result of {tid} attempt {n} (a result is written once)")
            continue
        taken.add(n)
        data = log.read(i)
        h = sha256(data)
        out.append((n, i, log_key(tid, n), data, h.hexdigest()))
        if check:
            checked.add(i, h.digest())
    if len(out) > 1:
        out.sort(key=lambda line: line[0])
    return out


def check_seals(log: LogIndex, seals: LogSeals, checked: CheckedLines,
                problem: Callable[[tuple[Any, ...], str], None]) -> None:
    """Each first line a scan checked held to its latest seal (one the ledger never sealed, one
    changed since it was sealed), and each sealed result with no line, named."""
    if not seals.all_equal(checked.marks, checked.digests):  # else every checked line is its seal
        marks, digests = checked.marks, checked.digests
        for i, first in enumerate(marks):
            if not first:
                continue
            actual, want = digests[32 * i: 32 * i + 32].hex(), seals.want(i)
            if want == actual:
                continue
            tid, n, at = log.trial_of(i), log.attempt(i), log.offset(i)
            if want is None:
                problem((UNSEALED, tid, (LOG, str(n), str(at))),
                        f"{LOG}: byte {at}: the result of {tid} attempt {n} is not in the ledger (added after the run?)")
            else:
                problem((SEALED, log_key(tid, n)), f"{LOG}: byte {at}: the result of {tid} attempt {n} was modified "
                                                   f"after it was written (sha256 {actual[:12]} != sealed {want[:12]})")
    for rel in seals.missing:
        problem((SEALED, rel), no_line_text(rel))


def no_line_text(rel: str) -> str:
    """The one wording of a result sealed into the log with no line there."""
    tid, n = key_parts(rel) or ("?", "?")
    return (f"{LOG}: the result of {tid} attempt {n} was sealed but has no line in the log (removed or changed "
            "after it was written)")


__all__ = ["CheckedLines", "check_seals", "first_lines", "no_line_text"]
