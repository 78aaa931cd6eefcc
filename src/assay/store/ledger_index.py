"""The ledger's latest digest per path, held compactly for a scan of 10^6 trials.

A dict of path strings to hex digests costs about 230 bytes a sealed file (530 MB at 10^6
trials with their traces); this index keeps 16 bytes of a keyed BLAKE2b of each path, the 32
bytes of its digest and one byte saying whether a trial scan already compared it: about 50
bytes a file (measured: bench/commands.py). The key is drawn afresh for every index, so no
path can be made to collide with another on purpose; by chance two of 10^7 paths collide with
odds under 10^-24. Paths are not kept: :meth:`SealedIndex.unchecked` reads the ledger again for
the few records no trial covered (the manifest, score files, files deleted since).

The ledger is read line by line (never whole), numbered and split exactly as
``Path.read_text().splitlines()`` splits it, so every reader of it agrees on every line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import Callable, Iterator

#: a digest stored as its 32 bytes; anything else a ledger line calls sha256 is kept as written
HEX64 = re.compile(r"[0-9a-f]{64}")


def digest_bytes(text: str) -> bytes | None:
    """The 32 bytes of a digest written as :data:`HEX64` matches it, 64 lowercase hex characters
    (None: written otherwise). What the pattern says, without the pattern: it took 1.4 us a line."""
    if len(text) != 64:
        return None
    try:
        raw = bytes.fromhex(text)  # takes spaces and capitals too: refused below
    except ValueError:
        return None
    return raw if raw.hex() == text else None

#: the prefixes of per-trial paths: trial folders, and results in the results log (store/results_log.py)
_PER_TRIAL = ("trials/", "results.jsonl/")
_BUCKET_BITS = 8
_BUCKETS, _LO64 = 1 << _BUCKET_BITS, (1 << 64) - 1


def iter_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number from 1, text) of a text file read in lines, exactly as
    ``path.read_text(encoding="utf-8", errors="replace").splitlines()`` numbers and splits it
    (universal newlines, the other line boundaries of :meth:`str.splitlines`), in bounded memory."""
    n = 0
    with open(path, "rb") as f:
        for raw in f:  # each ends with the b"\n" that ends a line in any reading, so split alone it splits the same
            for part in raw.decode("utf-8", errors="replace").splitlines():
                n += 1
                yield n, part


class SealedIndex:
    """Latest sealed digest per path of one ledger, with a mark per path for "compared already"."""

    def __init__(self, ledger: Path | None, parse: Callable[[str], tuple[str, str] | None], *,
                 skip: Callable[[str], bool] | None = None) -> None:
        self._ledger, self._parse = ledger, parse
        self._skip = skip  # paths whose seals are another index's (the results log's lines: store/log_seals.py)
        self._key = os.urandom(16)
        self._hi, self._lo = array("Q"), array("Q")
        self._digest = b""
        self._odd: dict[int, str] = {}  # position -> a "digest" that is not 64 lowercase hex characters
        self._done = bytearray()
        self._names: dict[int, str] = {}  # position -> path, for the sealed paths outside trials/
        self.damaged: list[tuple[int, str]] = []  # (line number, text): JSON but no record (damaged_lines)
        if ledger is not None and ledger.exists():
            self._build()

    def _hash(self, rel: str) -> int:
        return int.from_bytes(hashlib.blake2b(rel.encode("utf-8", "surrogatepass"), digest_size=16,
                                              key=self._key).digest(), "big")

    def _records(self, damaged: list[tuple[int, str]] | None = None) -> Iterator[tuple[str, str]]:
        """The ledger's records; the lines that are JSON but no record go to ``damaged`` (as
        :func:`damaged_lines` finds them: the same pass, when the index is built)."""
        assert self._ledger is not None
        for n, line in iter_lines(self._ledger):
            rec = self._parse(line)
            if rec is not None:
                yield rec
            elif damaged is not None and _is_damage(line):
                damaged.append((n, line))

    def _build(self) -> None:
        """Records go to 256 buckets by their hash's first byte, as compact arrays; each bucket is
        then sorted alone and appended, so what is held beside the index is one bucket's sort."""
        buckets = [(array("Q"), array("Q"), bytearray(), {}) for _ in range(_BUCKETS)]
        names: list[dict[int, str]] = [{} for _ in range(_BUCKETS)]
        skip = self._skip
        for rel, digest in self._records(self.damaged):
            if skip is not None and skip(rel):
                continue
            h = self._hash(rel)
            b = h >> (128 - _BUCKET_BITS)
            hi, lo, digests, odd = buckets[b]
            if not rel.startswith(_PER_TRIAL):
                names[b][len(hi)] = rel  # the few sealed files outside trials/ and the results log, kept by name
            raw = digest_bytes(digest)
            if raw is not None:
                digests += raw
            else:
                digests += bytes(32)
                odd[len(hi)] = digest
            hi.append(h >> 64)
            lo.append(h & _LO64)
        out = bytearray()
        for b in range(_BUCKETS):
            hi, lo, digests, odd = buckets[b]
            buckets[b] = (array("Q"), array("Q"), bytearray(), {})  # freed once sorted into the index
            keyed = sorted((hi[j] << 64 | lo[j]) << 32 | j for j in range(len(hi)))  # then by ledger order
            for k, key in enumerate(keyed):
                h = key >> 32
                if k + 1 < len(keyed) and keyed[k + 1] >> 32 == h:
                    continue  # a later record of the same path wins
                j = key & 0xFFFFFFFF
                if j in odd:
                    self._odd[len(self._hi)] = odd[j]
                if j in names[b]:
                    self._names[len(self._hi)] = names[b][j]
                self._hi.append(h >> 64)
                self._lo.append(h & _LO64)
                out += digests[32 * j: 32 * j + 32]
            del hi, lo, digests, odd, keyed
            names[b] = {}
        self._digest = bytes(out)
        self._done = bytearray(len(self._hi))

    def _find(self, rel: str) -> int:
        h = self._hash(rel)
        hi, lo = h >> 64, h & ((1 << 64) - 1)
        i = bisect_left(self._hi, hi)
        n = len(self._hi)
        while i < n and self._hi[i] == hi:
            if self._lo[i] == lo:
                return i
            i += 1
        return -1

    def _value(self, i: int) -> str:
        odd = self._odd.get(i)
        return odd if odd is not None else self._digest[32 * i: 32 * i + 32].hex()

    def __len__(self) -> int:
        return len(self._hi)

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self._find(rel) >= 0

    def get(self, rel: str) -> str | None:
        i = self._find(rel)
        return None if i < 0 else self._value(i)

    def find(self, rel: str) -> int:
        """The place of ``rel`` in the index, for :meth:`compare_at` (-1: not sealed)."""
        return self._find(rel)

    def compare(self, rel: str) -> str | None:
        """The sealed digest of ``rel`` (None: not sealed), marked as compared by a trial scan."""
        return self.compare_at(self._find(rel))

    def compare_at(self, i: int) -> str | None:
        """:meth:`compare` of the path found at ``i`` by :meth:`find`."""
        if i < 0:
            return None
        self._done[i] = 1
        return self._value(i)

    def named(self) -> list[str]:
        """The sealed paths outside trials/ and the results log (the manifest, score versions ...),
        sorted: the few the index keeps by name."""
        return sorted(self._names.values())

    def unchecked(self) -> list[tuple[str, str]]:
        """(path, digest) of every sealed path no :meth:`compare` marked, sorted by path."""
        undone = [i for i, done in enumerate(self._done) if not done]
        names = {i: self._names[i] for i in undone if i in self._names}
        if len(names) < len(undone):  # a trial's sealed file no trial scan compared: its name is in the ledger
            for rel, _d in self._records():
                i = self._find(rel)
                if i >= 0 and not self._done[i]:
                    names[i] = rel
        return sorted((rel, self._value(i)) for i, rel in names.items())


def last_record_of(ledger: Path, rel: str, parse: Callable[[str], tuple[str, str] | None]) -> str | None:
    """The digest of ``rel``'s last record in the ledger (None: none), the ledger read in chunks and
    only the lines holding ``rel``'s name parsed, by ``parse``, the rule every reader uses."""
    needle = rel.encode()
    found: str | None = None
    try:
        f = open(ledger, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with f:
        carry = b""
        while True:
            chunk = f.read(1 << 22)
            data = carry + chunk
            cut = len(data) if not chunk else data.rfind(b"\n") + 1
            block, carry = data[:cut], data[cut:]
            at = block.find(needle)
            while at >= 0:
                start = block.rfind(b"\n", 0, at) + 1
                end = block.find(b"\n", at)
                end = len(block) if end < 0 else end
                for line in block[start:end].decode("utf-8", errors="replace").splitlines():
                    rec = parse(line)
                    if rec is not None and rec[0] == rel:
                        found = rec[1]
                at = block.find(needle, end)
            if not chunk:
                return found


def damaged_lines(ledger: Path, parse: Callable[[str], tuple[str, str] | None]) -> list[tuple[int, str]]:
    """(line number, text) of the ledger's lines that are JSON but no record ``parse`` takes; a line
    that is not JSON at all is a torn write (fenced by the next), not damage."""
    if not ledger.exists():
        return []
    return [(n, line) for n, line in iter_lines(ledger) if parse(line) is None and _is_damage(line)]


def _is_damage(line: str) -> bool:
    """A line no record was parsed from that is JSON all the same (a torn write is not JSON)."""
    if not line.strip():
        return False
    try:
        json.loads(line)
    except ValueError:
        return False  # torn
    return True


__all__ = ["SealedIndex", "damaged_lines", "iter_lines", "last_record_of"]
