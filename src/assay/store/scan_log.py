"""The results log as a run scan reads it: one trial's lines, each attempt's first, held to the
ledger. Kept apart from :mod:`assay.store.scan`, which reads trial folders, so each stays one job:
the scan looks a trial's lines up once and hands them here, which marks the first lines it checked;
once every trial was read, :func:`check_seals` holds each marked line to the seal the ledger gave it
(:mod:`assay.store.log_seals`, matched where the log was indexed)."""

from __future__ import annotations

from typing import Any, Callable

from assay.store.log_seals import LogSeals
from assay.store.results_log import LOG, LogIndex, key_parts, log_key

#: the order of the checks, as the scan sorts its problems (store/scan.py, store/scan_rest.py)
SEALED, UNSEALED = 1, 2


def first_lines(log: LogIndex, tid: str, entries: list[int], *, check: bool, firsts: bytearray,
                problem: Callable[[tuple[Any, ...], str], None]) -> list[tuple[int, int, str, str]]:
    """(attempt, entry, ledger key, digest) of each attempt's first line, in the order of the
    attempts. With ``check``, a line that repeats an attempt is a problem (a repeat is never read:
    the first line of an attempt is its result), and each first line is marked in ``firsts``, to be
    held to its seal by :func:`check_seals`."""
    out: list[tuple[int, int, str, str]] = []
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
        out.append((n, i, log_key(tid, n), log.digest(i)))
        if check:
            if i >= len(firsts):  # indexed since: a reader of the same RunDir refreshed the log
                firsts.extend(bytes(i + 1 - len(firsts)))
            firsts[i] = 1
    if len(out) > 1:
        out.sort()
    return out


def check_seals(log: LogIndex, seals: LogSeals, firsts: bytearray,
                problem: Callable[[tuple[Any, ...], str], None]) -> None:
    """Each first line a scan checked held to its latest seal (one the ledger never sealed, one
    changed since it was sealed), and each sealed result with no line, named."""
    if not (seals.all_equal(log) and len(firsts) <= seals.n):  # else every line is its seal
        for i, first in enumerate(firsts):
            if not first:
                continue
            actual, want = log.digest(i), seals.want(i)
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


__all__ = ["check_seals", "first_lines", "no_line_text"]
