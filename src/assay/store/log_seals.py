"""The ledger's seals of the results log's lines, matched to the lines where the log is indexed.

A scan used to look every line's seal up in the ledger's index, one keyed hash and one bisection a
line in the scanning process (2.5 us a line, and the ledger's 10^6 records of the log indexed there
first). The process that indexes the log (:mod:`assay.store.log_child`) reads the ledger once the log
is indexed and hands each attempt's first line its latest sealed digest, and the sealed results that
have no line; the scan marks which first lines it checked and compares them all at the end
(:func:`assay.store.scan_log.check_seals`). The problems and their order are the ones the lookup gave.

The ledger is read after the log, so every indexed line's seal, written before the line, is read.
A record whose line is in neither the index nor the log as it is once the ledger was read names a
sealed result with no line; one whose line was appended since the index was built (a live run) does
not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.store.ledger_index import digest_bytes, iter_lines
from assay.store.results_log import LogIndex, key_parts
from assay.store.ledger_line import ledger_record
from assay.untrusted.numeral import canonical_decimal

class LogSeals:
    """Per entry of a log's index: whether the ledger sealed it as its attempt's first line, and the
    latest digest it sealed (32 bytes, or kept as written in ``odd``); the sealed keys with no line."""

    _STATE = ("n", "sealed", "digest", "odd", "missing")

    def __init__(self, n: int) -> None:
        self.n = n  # entries of the index covered (lines indexed later are sealed by no one here)
        self.sealed = bytearray(n)
        self.digest = bytearray(32 * n)
        self.odd: dict[int, str] = {}  # entry -> a sealed "digest" that is not 64 lowercase hex characters
        self.missing: dict[str, str] = {}  # ledger key -> latest digest, of results sealed with no line

    def state(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._STATE}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "LogSeals":
        seals = cls.__new__(cls)
        for name in cls._STATE:
            setattr(seals, name, state[name])
        return seals

    def want(self, i: int) -> str | None:
        """The latest digest sealed for entry ``i`` (None: no seal names it)."""
        if i >= self.n or not self.sealed[i]:
            return None
        odd = self.odd.get(i)
        return odd if odd is not None else self.digest[32 * i: 32 * i + 32].hex()

    def all_equal(self, marks: bytearray, digests: bytearray) -> bool:
        """Every entry checked (``marks``), sealed, and sealed with exactly the digest of the bytes
        read from it (``digests``, 32 bytes an entry): then no checked line is wrong."""
        return (not self.odd and len(marks) == self.n and 0 not in self.sealed and 0 not in marks
                and self.digest == digests)


def first_of(index: LogIndex, trial_id: str, attempt: str) -> int:
    """The entry of the first line of ``trial_id``'s attempt ``attempt`` (as a ledger key spells it:
    a number written otherwise names no line), -1 when it has none."""
    n = attempt_number(attempt)
    if n is None:
        return -1
    for i in index.entries(trial_id, mark=False):
        if index.attempt(i) == n:
            return i
    return -1


def attempt_number(text: str) -> int | None:
    """The attempt a ledger key names, as :func:`~assay.store.results_log.log_key` spells it (None:
    spelled otherwise, so it names no line)."""
    return canonical_decimal(text)


def seal_lines(index: LogIndex, ledger: Path) -> LogSeals:
    """The seals of the log's indexed lines, from the ledger as it is now (read after the index)."""
    seals = LogSeals(len(index))
    if not ledger.exists():
        return seals
    unmatched: dict[str, str] = {}
    for _n, line in iter_lines(ledger):
        rec = ledger_record(line)
        if rec is None:
            continue
        rel, digest = rec
        parts = key_parts(rel)
        if parts is None:
            continue
        i = first_of(index, *parts)
        if i < 0:
            unmatched[rel] = digest  # the latest record of a key wins, as everywhere
            continue
        seals.sealed[i] = 1
        raw = digest_bytes(digest)
        if raw is not None:
            seals.digest[32 * i: 32 * i + 32] = raw
            seals.odd.pop(i, None)
        else:
            seals.odd[i] = digest
    if unmatched:  # a line appended since the index was built (a live run) has its seal: not missing
        later = index.keys_after()
        for rel, digest in unmatched.items():
            tid, n = key_parts(rel)  # type: ignore[misc]
            if (tid, attempt_number(n)) not in later:
                seals.missing[rel] = digest
    return seals


__all__ = ["LogSeals", "attempt_number", "first_of", "seal_lines"]
