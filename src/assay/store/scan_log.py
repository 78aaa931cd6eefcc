"""The results log as a run scan reads it: one trial's lines, each attempt's first, held to the
ledger. Kept apart from :mod:`assay.store.scan`, which reads trial folders, so each stays one job:
the scan looks a trial's lines up once and hands them here with the ledger's index."""

from __future__ import annotations

from typing import Any, Callable

from assay.store.ledger_index import SealedIndex
from assay.store.results_log import LOG, LogIndex, log_key

#: the order of the checks, as the scan sorts its problems (store/scan.py, store/scan_rest.py)
SEALED, UNSEALED = 1, 2


def first_lines(log: LogIndex, tid: str, entries: list[int], *, check: bool, sealed: SealedIndex,
                problem: Callable[[tuple[Any, ...], str], None]) -> list[tuple[int, int, str, str]]:
    """(attempt, entry, ledger key, digest) of each attempt's first line, in the order of the
    attempts. With ``check``, a line that repeats an attempt, one the ledger never sealed and one
    changed since it was sealed are each a problem; a repeat is never read (the first line of an
    attempt is its result)."""
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
        key, actual = log_key(tid, n), log.digest(i)
        out.append((n, i, key, actual))
        if not check:
            continue
        want = sealed.compare(key)
        if want is None:
            at = log.offset(i)
            problem((UNSEALED, tid, (LOG, str(n), str(at))),
                    f"{LOG}: byte {at}: the result of {tid} attempt {n} is not in the ledger (added after the run?)")
        elif want != actual:
            problem((SEALED, key), f"{LOG}: byte {log.offset(i)}: the result of {tid} attempt {n} was modified after "
                                   f"it was written (sha256 {actual[:12]} != sealed {want[:12]})")
    if len(out) > 1:
        out.sort()
    return out


__all__ = ["first_lines"]
