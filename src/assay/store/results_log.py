"""The results log: a run's attempt results in one append-only file, a line per result.

One file per result costs every reader of a large run the kernel's work of listing and opening a
million folders (108 s here at 10^6 trials before anything is parsed). A run made with
``assay run --results log`` keeps its results in ``results.jsonl`` instead: each result is one line
of compact JSON (the very bytes its digest is of, without the newline), appended and fsynced.

Sealing is the ledger's, as for every evidence file, under a key naming the trial and attempt
inside the log, ``results.jsonl/<trial>/<attempt>`` (no file can be at such a path while the log is
a file). The ledger line is written first, then the line appended: a crash between the two leaves a
sealed result with no line (the attempt is closed as interrupted on resume, as a result file sealed
but never linked is), never a line that looks added by hand. A torn last line (a full disk, ``kill
-9``) is fenced off by the next append, never extended, and is not a result: only a line that
decodes to a trial id and an attempt is one. `assay verify` holds every such line to its sealed
digest, names a line the ledger never sealed or one that repeats a sealed attempt, and names a
sealed result with no line.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zlib
from array import array
from bisect import bisect_left
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Iterator, Sequence

import msgspec

#: the log's name in the run directory
LOG = "results.jsonl"
#: the ledger's keys of results in the log start so
KEY_PREFIX = LOG + "/"


def log_key(trial_id: str, attempt: int) -> str:
    """The ledger key of one attempt's result in the log."""
    return f"{KEY_PREFIX}{trial_id}/{attempt}"


def key_parts(key: str) -> tuple[str, str] | None:
    """(trial id, attempt) of a ledger key of the log, None for any other path."""
    if not key.startswith(KEY_PREFIX):
        return None
    tid, _, n = key[len(KEY_PREFIX):].rpartition("/")
    return (tid, n) if tid else None


def is_log(path: Path) -> bool:
    """``path`` is a regular file, found without following a link: a run's log is one or is none
    (a link, a FIFO or a folder in its place is never read, and `assay verify` names it)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def open_log(path: Path) -> BinaryIO | None:
    """The log opened for reading without following a link or waiting on a FIFO (None: no regular
    file is there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def append(root: Path, data: bytes) -> None:
    """Append one result's bytes (one line, compact JSON) to the log, fsynced."""
    if b"\n" in data or b"\r" in data:
        raise ValueError("a result in the log is one line of compact JSON")
    append_line(root / LOG, data)


def append_line(path: Path, data: bytes) -> None:
    """Append ``data`` and a newline to ``path``, fsynced: the one way the ledger and the log grow.
    A torn last line (a full disk, ``kill -9``) is fenced off by a newline first, never extended."""
    with open(path, "ab") as f:
        if f.tell() > 0:
            with open(path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    f.write(b"\n")
        f.write(data + b"\n")
        f.flush()
        os.fsync(f.fileno())


class _Key(msgspec.Struct):
    trial_id: str
    #: what the index's array holds (64-bit): a line claiming more is JSON but no result, named as such
    attempt: Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


_KEY = msgspec.json.Decoder(_Key)
#: bytes :meth:`LogIndex.read` takes from the log at once
_WINDOW = 1 << 18


class LogIndex:
    """Where each result of the log is (offset and size), found by trial; built in one pass over the
    log and extended by :meth:`refresh` as it grows. No digest is kept: a reader hashes the bytes it
    reads (store/scan_log.py), so a line changed since it was indexed is checked as it was read.

    No trial id is held: an entry keeps a keyed 64-bit BLAKE2b of its trial id (the key drawn
    afresh for every index, so no id can be made to collide on purpose) and the id's CRC-32 as a
    second check, its attempt, offset and size: about 40 bytes a result at 10^6. Lookups
    bisect the entries sorted by that hash (sorted again once enough were appended since)."""

    def __init__(self, root: Path, *, key: bytes | None = None, start: int = 0, stop: int | None = None) -> None:
        """The log indexed from byte ``start`` (0, or where a line starts) to ``stop`` (None: its end;
        else where a line starts), under ``key`` (None: one drawn afresh). A part (``start`` or
        ``stop`` given) is not sorted: it is joined to the part before it (:meth:`join`)."""
        self.path = root / LOG
        self.start = start  # where its first line starts (0 but for a part)
        self.end = start  # bytes of the log indexed (up to the last newline)
        self._key = key if key is not None else os.urandom(16)
        self._h, self._crc = array("Q"), array("I")
        self._attempt, self._offset, self._size = array("q"), array("Q"), array("I")
        self._sorted_h, self._sorted_i = array("Q"), array("I")  # the entries sorted by hash, as of the last sort
        self._seen = bytearray()  # entries whose trial a reader took (see :meth:`entries`)
        self._lone = bytearray()  # per sorted entry: no other entry has its hash (see :meth:`entries`)
        self._cursor = 0  # the entry after the one looked up last
        self.odd: list[int] = []  # offsets of lines that are JSON but no result (a torn write is not JSON)
        self._reader: BinaryIO | None = None
        self._window, self._window_at = b"", 0  # the log's bytes from _window_at, read last (see read)
        self._last_end = 0  # where the line read last ends
        self.refresh(stop, sort=start == 0 and stop is None)

    _STATE = ("start", "end", "_key", "_h", "_crc", "_attempt", "_offset", "_size", "_sorted_h", "_sorted_i", "_seen",
              "_lone", "odd")

    def state(self) -> dict[str, Any]:
        """What the index holds, plain (arrays and bytes): one process builds it for another."""
        return {name: getattr(self, name) for name in self._STATE}

    @classmethod
    def from_state(cls, root: Path, state: dict[str, Any]) -> "LogIndex":
        """The index :meth:`state` gave, over the same log (nothing is read until it grows)."""
        index = cls.__new__(cls)
        index.path, index._reader = root / LOG, None
        index._window, index._window_at, index._last_end, index._cursor = b"", 0, 0, 0
        for name in cls._STATE:
            setattr(index, name, state[name])
        return index

    def _hash(self, trial_id: str) -> tuple[int, int]:
        raw = trial_id.encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8, key=self._key).digest(), "big"), zlib.crc32(raw)

    def join(self, part: "LogIndex") -> bool:
        """Append the entries of ``part``, the same log indexed under the same key from where this
        index ends (the log indexed in halves, each by a process: store/log_child.py); sorted as
        :meth:`refresh` sorts. False, and nothing appended, for a part that does not follow on."""
        if part.path != self.path or part._key != self._key or part.start != self.end:
            return False
        for name in ("_h", "_crc", "_attempt", "_offset", "_size", "_seen"):
            getattr(self, name).extend(getattr(part, name))
        self.odd.extend(part.odd)
        self.end = part.end
        self._sort_if_many()
        return True

    def refresh(self, stop: int | None = None, *, sort: bool = True) -> None:
        """Index the lines appended since the last call (a line not yet ended is left for later),
        up to ``stop`` (where a line starts; None: the end). One loop with everything bound
        locally: at 10^6 lines each step counts."""
        self._window = b""  # read again: what :meth:`read` gives is the log as it is now
        f = open_log(self.path)
        if f is None:
            return
        decode, blake2b, crc32, key = _KEY.decode, hashlib.blake2b, zlib.crc32, self._key
        add_h, add_crc, add_attempt = self._h.append, self._crc.append, self._attempt.append
        add_offset, add_size, add_seen = self._offset.append, self._size.append, self._seen.append
        with f:
            f.seek(self.end)
            offset = self.end
            for line in f:
                if not line.endswith(b"\n") or (stop is not None and offset >= stop):
                    break  # torn, or being written; or where the next part starts
                data = memoryview(line)[:-1]
                try:
                    k = decode(data)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    self._not_a_result(data, offset)
                    offset += len(line)
                    continue
                raw = k.trial_id.encode("utf-8", "surrogatepass")
                add_h(int.from_bytes(blake2b(raw, digest_size=8, key=key).digest(), "big"))
                add_crc(crc32(raw))
                add_attempt(k.attempt)
                add_offset(offset)
                add_size(len(data))
                add_seen(0)
                offset += len(line)
            self.end = offset
        if sort:
            self._sort_if_many()

    def _sort_if_many(self) -> None:
        """Sort again once enough entries were appended since the last sort (lookups search the
        rest of them in log order)."""
        if len(self) - len(self._sorted_h) > max(4096, len(self._sorted_h) // 8):
            self._sort()

    def _not_a_result(self, data: memoryview, offset: int) -> None:
        """A line that is no result: torn (not JSON: fenced off, and a sealed line broken so is named
        as missing), or JSON all the same (named: added after the run)."""
        try:
            msgspec.json.decode(data)
        except msgspec.DecodeError:
            return
        self.odd.append(offset)

    def _sort(self) -> None:
        """Every entry into the sorted arrays (a stable sort: one trial's entries stay in log order)."""
        h = self._h
        order = sorted(range(len(h)), key=h.__getitem__)
        sh = self._sorted_h = array("Q", (h[j] for j in order))
        self._sorted_i = array("I", order)
        lone = bytearray(b"\x01") * len(h)
        for k in [k for k in range(1, len(sh)) if sh[k] == sh[k - 1]]:  # a trial's retries; collisions
            lone[order[k]] = lone[order[k - 1]] = 0
        self._lone = lone

    def __len__(self) -> int:
        return len(self._attempt)

    def __contains__(self, trial_id: object) -> bool:
        return isinstance(trial_id, str) and bool(self.entries(trial_id, mark=False))

    def entries(self, trial_id: str, *, mark: bool = True) -> list[int]:
        """The trial's entries in the order their lines were written; ``mark``: noted as taken, so
        :meth:`untaken_trials` leaves the trial out. (Called once per trial read: kept lean.)

        Readers mostly ask in the log's own order (the plan's, which the runner follows; the ledger's,
        which seals each line just before it is written): when the entry after the last one found
        is this trial's and no other entry has its hash, that entry is the answer, without the
        bisection. Otherwise the sorted entries are searched, as for any trial."""
        raw = trial_id.encode("utf-8", "surrogatepass")
        h = int.from_bytes(hashlib.blake2b(raw, digest_size=8, key=self._key).digest(), "big")
        sh, si = self._sorted_h, self._sorted_i
        n = len(sh)
        c = self._cursor
        if c < n and self._h[c] == h and self._lone[c] and n == len(self._h) and self._crc[c] == zlib.crc32(raw):
            self._cursor = c + 1
            if mark:
                self._seen[c] = 1
            return [c]
        k = bisect_left(sh, h)
        out = []
        while k < n and sh[k] == h:
            out.append(si[k])
            k += 1
        if n < len(self._h):  # the entries appended since the last sort, in log order
            k = n
            while True:
                try:
                    k = self._h.index(h, k)
                except ValueError:
                    break
                out.append(k)
                k += 1
        if out:
            crc, crcs = zlib.crc32(raw), self._crc
            out = [i for i in out if crcs[i] == crc]
            if out:
                self._cursor = out[-1] + 1
            if mark:
                for i in out:
                    self._seen[i] = 1
        return out

    def trial_of(self, i: int) -> str:
        """The trial id entry ``i``'s line names (read again from the log)."""
        return _KEY.decode(self.read(i)).trial_id

    def untaken_trials(self) -> Iterator[tuple[str, list[int]]]:
        """(trial id, its entries) of each trial none of whose entries :meth:`entries` marked yet,
        once, in the log's order of their first lines (each yielded trial's entries are marked), so
        a reader of them reads the log front to back, a window at a time (in the index's hash order
        each line was a read of its own: `assay verify` of 10^6 spent 11 s in them)."""
        if 0 not in self._seen:
            return  # every line's trial was taken (a byte search, for the run whose trials were all read)
        if len(self._sorted_h) < len(self):
            self._sort()
        sh, si, crcs, seen, lone = self._sorted_h, self._sorted_i, self._crc, self._seen, self._lone
        n = len(sh)
        rank: array[int] | None = None  # entry -> its place among the sorted entries (made when first needed)
        i = seen.find(0, 0, n)  # entries indexed after this sort (a reader refreshed meanwhile) wait for the next
        while i >= 0:
            if lone[i]:  # no other entry has its hash: the trial's one line (most trials: no lookup)
                seen[i] = 1
                yield self.trial_of(i), [i]
                i = seen.find(0, i + 1, n)
                continue
            if rank is None:
                rank = array("I", bytes(4 * n))
                for k, j in enumerate(si):
                    rank[j] = k
            lo = hi = rank[i]
            h = sh[lo]
            while lo > 0 and sh[lo - 1] == h:
                lo -= 1
            while hi + 1 < n and sh[hi + 1] == h:
                hi += 1
            crc = crcs[i]  # one hash, perhaps more than one trial (told apart by their CRC-32)
            entries = sorted(j for j in si[lo:hi + 1] if crcs[j] == crc)  # log order: i first, none before it unseen
            if not any(seen[j] for j in entries):
                for j in entries:
                    seen[j] = 1
                yield self.trial_of(i), entries
            i = seen.find(0, i + 1, n)

    def trial_ids(self) -> list[str]:
        """Every trial with a result in the log, sorted (their ids read again: for a small run)."""
        return sorted({self.trial_of(i) for i in range(len(self))})

    def unplanned(self, planned: Sequence[str]) -> list[str]:
        """The log's trials that ``planned`` does not name, sorted (ids read only for those)."""
        known = sorted(self._hash(t) for t in planned)
        out = set()
        for i in range(len(self)):
            pair = (self._h[i], self._crc[i])
            k = bisect_left(known, pair)
            if k == len(known) or known[k] != pair:
                out.add(self.trial_of(i))
        return sorted(out)

    def attempt(self, i: int) -> int:
        return self._attempt[i]

    def offset(self, i: int) -> int:
        return self._offset[i]

    def keys_after(self) -> set[tuple[str, int]]:
        """(trial id, attempt) of every whole line appended since the index was last extended (read,
        not indexed: the index stays as its readers know it)."""
        out: set[tuple[str, int]] = set()
        f = open_log(self.path)
        if f is None:
            return out
        with f:
            f.seek(self.end)
            for line in f:
                if not line.endswith(b"\n"):
                    break
                try:
                    k = _KEY.decode(memoryview(line)[:-1])
                except (msgspec.DecodeError, msgspec.ValidationError):
                    continue
                out.add((k.trial_id, k.attempt))
        return out

    def read(self, i: int) -> bytes:
        """Entry ``i``'s bytes, as they are in the log since the last :meth:`refresh` (the log held
        open from the first read; a reading in the log's order is served from a window of it)."""
        if self._reader is None:
            self._reader = open_log(self.path)  # closed by close(), or with this index
            if self._reader is None:
                raise FileNotFoundError(f"{self.path}: no longer a regular file")
        offset, size = self._offset[i], self._size[i]
        at, near, self._last_end = offset - self._window_at, 0 <= offset - self._last_end < _WINDOW, offset + size
        if 0 <= at and at + size <= len(self._window):
            return self._window[at: at + size]
        if size >= _WINDOW or not near:  # a lookup here and there: the line alone
            return os.pread(self._reader.fileno(), size, offset)
        # reading in the log's order (each line at or a little after the last one read): a window
        # of the log at once, one system call per window (a pread a line: 3.4 us at 10^5; a window
        # for every lookup here and there would copy the window for one line)
        self._window, self._window_at = os.pread(self._reader.fileno(), _WINDOW, offset), offset
        return self._window[:size]

    def close(self) -> None:
        self._window = b""
        if self._reader is not None:
            self._reader.close()
            self._reader = None


__all__ = ["KEY_PREFIX", "LOG", "LogIndex", "append", "append_line", "is_log", "key_parts", "log_key", "open_log"]
