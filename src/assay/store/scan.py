"""One pass over a run directory's trials, for `assay verify` and for `assay score`.

Both read every trial. Done once per trial, every file is read once: hashed against the ledger
and, for a result, parsed from the very same bytes (:mod:`assay.store.fastread`). The checks,
their messages and their order are the ones :mod:`assay.store.integrity` documents. A trial
folder holding anything but plain folders and regular files (a symbolic link, a socket, an
unreadable folder, a folder named like an evidence file) is read by the path-by-path code instead,
which follows links exactly as the checks always did: nothing unusual is read otherwise."""

from __future__ import annotations

import itertools
import os
import weakref
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from assay.errors import IntegrityError
from assay.spec.digest import sha256_bytes
from assay.store.artifacts_seen import ArtifactsSeen
from assay.store.fastread import Attempt, decode_result
from assay.store.ledger_index import SealedIndex
from assay.store.prehash import Prehash
from assay.store.log_child import PendingIndex
from assay.store.odd_files import folders_named, not_regular, odd_entries
from assay.store.results_log import LOG, LogIndex, is_log, key_parts
from assay.store.ledger_line import LEDGER, ledger_record
from assay.store.rundir import TRIALS, RunDir, trial_files
from assay.store.scan_log import CheckedLines, check_seals, first_lines
from assay.store.scan_read import EVIDENCE_NAMES, TRACE, Loaded, load_trial, read_trials
from assay.store.scan_rest import RESULT, SCORE_VERSION, SEALED, UNSEALED, check_rest, trace_grew_only
from assay.store.scan_workers import PROCESSES_FROM, workers_wanted
from assay.store.trial_order import share_names, unplanned

#: the reading of a chunk of trial folders: their files only (the scorer names its own, score/trial_sight.py)
LOAD_FILES = "assay.store.scan_read:load_chunk"


@dataclass
class TrialRead:
    """One trial as read by a scan: the results of its numbered attempts in order, with the digest
    of the bytes each was parsed from, and its trace (present or not, digest if it was read)."""

    trial_id: str
    attempts: list[Attempt] = field(default_factory=list)
    result_digests: list[tuple[str, str]] = field(default_factory=list)  # (run-relative path, sha256)
    raws: list[bytes] = field(default_factory=list)  # each attempt's result as the bytes it was parsed from
    artifacts_ok: bool = True
    has_trace: bool = False
    trace_digest: str | None = None  # of the bytes read, when the trace was read (checked, or by a trace reader)
    extra: Any = None  # what the scan's load function took from the folder beside its files (its caller's)


class RunScan:
    """Reads trials one at a time; with ``verify`` it also checks them, and :meth:`finish` checks
    what no trial covers (the manifest, sealed files outside trials, deleted files, artifacts)
    and returns the problems in the order `assay verify` has always reported them."""

    def __init__(self, rd: RunDir, *, verify: bool = True, workers: int | None = None,
                 load: str = LOAD_FILES, outputs: bool = True) -> None:
        self.rd = rd
        self.outputs = outputs  # the score versions checked too (False: a reader of the evidence only)
        self.load = load  # "module:function" reading a chunk of trial folders (scan_read.load_chunk's shape)
        self.root = str(rd.path)
        self.verify = verify
        self.workers = workers  # reading processes (None: ASSAY_SCAN_WORKERS, else one per core for a large run)
        # the ledger's latest digest per path, compact (store/ledger_index.py): nothing here grows with
        # the trials but the sorted listing of trials/ and one byte per trial folder
        logged = is_log(rd.path / LOG)  # its index and its lines' seals are built meanwhile, elsewhere:
        pending = PendingIndex(rd.path, seals=verify) if logged else None
        self.sealed = SealedIndex(rd.path / LEDGER if verify else None, ledger_record,
                                  skip=(lambda rel: key_parts(rel) is not None) if logged else None)
        self.checked = 0
        self._check = verify  # checking the trial being read (a trial is checked once, however often read)
        self._visited = bytearray()  # per folder of trial_dirs(): read already
        self._visited_other: set[str] = set()  # ids read without a folder in that listing
        self._trial_dirs: list[str] | None = None
        self._log: LogIndex | None = None  # the results log, indexed on first use (its lines hashed as read)
        self._pending = self._seals_from = pending
        self._log_visited = bytearray()
        self._firsts = CheckedLines()  # the log's first lines checked, and the digests of what was read
        self._entries: list[int] = []  # the lines of the trial being read, in the log
        self._looked_up: dict[str, list[int]] = {}  # lines of trials all_trials() yielded, not yet read
        self._linked_dirs: set[str] = set()  # folders of trials/ that are links (from the same listing)
        self._live: set[str] = set()  # trials with an attempt in flight
        self._problems: list[tuple[tuple[Any, ...], str]] = []
        self._artifacts = ArtifactsSeen(rd)  # which artifacts the results name are on disk
        # the score versions (765 MB of rows each at 10^6 trials) hashed beside the trials' reading
        versions = [rel for rel in self.sealed.named() if SCORE_VERSION.fullmatch(rel)] if verify and outputs else []
        self._prehash = Prehash(rd.path, versions) if versions else None
        if self._prehash is not None:
            weakref.finalize(self, self._prehash.stop)  # a scan let go before its end hashes no more

    # ------------------------------------------------------------------ trials
    def trial_dirs(self) -> list[str]:
        """Every folder of trials/ (links to folders too), sorted (listed once per scan)."""
        if self._trial_dirs is None:
            root = os.path.join(self.root, TRIALS)
            if not os.path.isdir(root):
                return []
            names: list[str] = []
            with os.scandir(root) as it:
                for e in it:
                    if e.is_dir():
                        names.append(e.name)
                        if e.is_symlink():
                            self._linked_dirs.add(e.name)
            names.sort()
            self._trial_dirs = names
            self._visited = bytearray(len(names))
        return self._trial_dirs

    def log(self) -> LogIndex | None:
        """The run's results log, every line located in one pass (None: no log)."""
        if self._pending is not None:
            self._log, self._pending = self._pending.result(), None
            self.rd.share_log(self._log)  # the run's other readers (a report's trial sections) use this one
            self._log_visited = bytearray(len(self._log))  # per entry: its folder-less trial was read
            self._firsts = CheckedLines(len(self._log) if self.verify else 0)
        return self._log

    def all_trials(self) -> Iterator[str]:
        """Every trial of the run once: the folders of trials/ (sorted), then the trials with results
        in the log and no folder, in the log's order (their ids are never all held at once)."""
        yield from self.trial_dirs()
        log = self.log()
        if log is not None:
            for tid, entries in log.untaken_trials():
                if self._position(tid) < 0:
                    self._looked_up[tid] = entries  # taken by _log_entries when the trial is read
                    yield tid

    def read_in_order(self, planned: Sequence[str]) -> Iterator[tuple[str, TrialRead | None]]:
        """(trial id, as read) of every trial in the order readers walk a run: ``planned``, then the
        trials the plan does not name (folders, and trials of the log), sorted. Those are found
        once every planned trial was read, so reading ahead never takes one for the other."""
        dirs = self.trial_dirs()
        share_names(dirs, planned)
        yield from zip(planned, self.trials(planned))
        rest = list(unplanned(planned, dirs))
        log = self.log()
        if log is not None:
            rest = sorted(set(rest).union(tid for tid, _entries in log.untaken_trials()))
        yield from zip(rest, self.trials(rest))

    def _position(self, tid: str) -> int:
        """Where ``tid`` is in :meth:`trial_dirs` (-1: no such folder)."""
        dirs = self.trial_dirs()
        i = bisect_left(dirs, tid)
        return i if i < len(dirs) and dirs[i] == tid else -1

    def _first_visit(self, tid: str, i: int | None = None) -> bool:
        i = self._position(tid) if i is None else i
        if i < 0:
            first = tid not in self._visited_other
            self._visited_other.add(tid)
            return first
        first = not self._visited[i]
        self._visited[i] = 1
        return first

    def readers(self, n: int | None) -> int:
        """Reading processes for a read of ``n`` trials (None: every folder); only folders are read there."""
        folders = len(self.trial_dirs())
        return workers_wanted(folders if n is None else min(n, folders), self.workers)

    def trials(self, ids: Iterable[str]) -> Iterator[TrialRead | None]:
        """Read trials in the order given (None for an id without a folder). Folders are listed,
        and their files read and hashed, ahead of the checking and parsing here, for a large run
        by one process per core (:mod:`assay.store.scan_read`), so the kernel's work of opening
        every folder and file and the hashing use every core."""
        workers = self.readers(len(ids) if isinstance(ids, list) else None)
        log = self.log()
        placed, ahead = itertools.tee((tid, self._position(tid)) for tid in ids)
        items = ((tid, tid not in self._linked_dirs) if i >= 0 else None for tid, i in ahead)
        for (tid, i), loaded in zip(placed, read_trials(self.root, items, every=self.verify, workers=workers,
                                                                     load=self.load)):
            if i >= 0:
                yield self.trial(tid, loaded, i)
            elif log is not None and (entries := self._log_entries(tid)):
                yield self._trial_in_log(tid, entries)
            else:
                yield None

    def trial(self, trial_id: str, loaded: Loaded | None = None, position: int | None = None) -> TrialRead:
        """Read (and with ``verify``, check) one trial folder (``loaded``: its files, read ahead;
        ``position``: its place in :meth:`trial_dirs`, when the caller has it)."""
        i = self._position(trial_id) if position is None else position
        self._check = self._first_visit(trial_id, i) and self.verify
        self._artifacts.next_trial()
        self._entries = self._log_entries(trial_id)
        if loaded is None:
            loaded = load_trial(self.root, trial_id, i >= 0 and trial_id not in self._linked_dirs, self.verify)
        if loaded is None:  # not a plain folder, or it changed under the scan: path by path, as the checks always did
            return self._trial_by_paths(trial_id)
        return self._trial_fast(trial_id, loaded)

    def _trial_fast(self, tid: str, loaded: Loaded) -> TrialRead:
        tdir, files, dirs, numbers, raw, digests = (loaded.tdir, loaded.files, loaded.dirs, loaded.numbers,
                                                    loaded.results, loaded.digests)
        prefix = f"{TRIALS}/{tid}/"
        fileset = set(files)
        live = False
        started, started_at = "", -1  # the last attempt's started marker, and its place in the ledger's index
        if self._check and numbers:
            last = f"attempts/{numbers[-1]}"
            started = last + "/started.json"
            if started in fileset:
                started_at = self.sealed.find(prefix + started)
            live = (started_at >= 0 and last + "/result.json" not in fileset and last + "/result.json" not in dirs
                    and not self._logged(numbers[-1]))
            if live:
                self._live.add(tid)
        results: list[str] = []
        wanted = {f"attempts/{n}/result.json" for n in numbers} if not self.verify else raw
        for f in files:
            if f in raw and f in wanted:
                results.append(f)
            if not self._check:
                continue
            rel = prefix + f
            sealed = self.sealed.compare_at(started_at) if f == started else self.sealed.compare(rel)
            if sealed is not None:
                self.checked += 1
                actual = digests[f]
                if actual != sealed and not (live and rel.endswith("/trace.jsonl")
                                             and trace_grew_only(Path(tdir, f), sealed)):
                    self._problem((SEALED, rel), f"{rel}: modified after it was written (sha256 {actual[:12]} != "
                                                  f"sealed {sealed[:12]})")
            else:
                parts = f.split("/")
                if not live and not parts[-1].startswith(".tmp-"):
                    what = "result file" if parts[-1] == "result.json" else "file"
                    self._problem((UNSEALED, tid, tuple(parts)),
                                  f"{rel}: {what} not in the ledger (added after the run?)")
        parsed = {f: self._parse(tid, f.split("/")[1], raw[f], os.path.join(tdir, f)) for f in results}
        out = TrialRead(tid, has_trace="trace.jsonl" in fileset or "trace.jsonl" in dirs,
                        trace_digest=digests.get(TRACE), extra=loaded.extra)
        for n in numbers:
            f = f"attempts/{n}/result.json"
            if f not in fileset:
                continue
            r = parsed.get(f)
            if r is None:
                continue  # damaged: a problem is recorded and the score refused
            out.attempts.append(r)
            out.result_digests.append((prefix + f, digests[f]))
            out.raws.append(raw[f])
        self._add_logged(tid, out)
        out.artifacts_ok = self._artifacts_ok(out.attempts)
        return out

    def _trial_by_paths(self, tid: str) -> TrialRead:
        """The path-by-path reading of one trial (links followed as the checks always did)."""
        rd, tdir = self.rd, self.rd.trial_dir(tid)
        numbers = rd.attempts_of(tid)
        if self._check:
            for rel, what in odd_entries(tdir):  # links and special files: named, never read through
                self._problem((UNSEALED, tid, tuple(rel.split("/"))),
                              f"{TRIALS}/{tid}/{rel}: {what}, not a regular file (evidence is never followed)")
            for rel in folders_named(tdir, EVIDENCE_NAMES):  # sealed ones are named by finish()
                if f"{TRIALS}/{tid}/{rel}" not in self.sealed:
                    self._problem((UNSEALED, tid, tuple(rel.split("/"))),
                                  f"{TRIALS}/{tid}/{rel}: a folder, not a regular file (evidence is never followed)")
            live = False
            if numbers:
                adir = rd.attempt_dir(tid, numbers[-1])
                started = (adir / "started.json").relative_to(rd.path).as_posix()
                live = (started in self.sealed and (adir / "started.json").is_file()
                        and not (adir / "result.json").exists() and not self._logged(numbers[-1]))
            if live:
                self._live.add(tid)
            else:
                for p in trial_files(tdir):
                    rel = p.relative_to(rd.path).as_posix()
                    if rel not in self.sealed:
                        what = "result file" if p.name == "result.json" else "file"
                        self._problem((UNSEALED, tid, p.relative_to(tdir).parts),
                                      f"{rel}: {what} not in the ledger (added after the run?)")
        seen: dict[str, tuple[bytes, Attempt | None]] = {}  # attempt folder name -> (bytes, parsed)
        if self._check:
            for res in sorted(tdir.glob("attempts/*/result.json")):
                if not_regular(res) is not None:
                    continue  # named above (a link, a folder or a special file)
                raw = res.read_bytes()
                seen[res.parent.name] = (raw, self._parse(tid, res.parent.name, raw, res))
        out = TrialRead(tid, has_trace=rd.trace_path(tid).exists())
        for n in numbers:
            p = rd.attempt_dir(tid, n) / "result.json"
            if not p.exists() or not_regular(p) is not None:
                continue
            if str(n) in seen:
                raw, r = seen[str(n)]
            else:
                raw = p.read_bytes()
                r = self._parse(tid, str(n), raw, p)
            if r is not None:
                out.attempts.append(r)
                out.result_digests.append((p.relative_to(rd.path).as_posix(), sha256_bytes(raw)))
                out.raws.append(raw)
        self._add_logged(tid, out)
        out.artifacts_ok = self._artifacts_ok(out.attempts)
        return out

    def _trial_in_log(self, tid: str, entries: list[int]) -> TrialRead:
        """A trial with results in the log and no folder (no started marker, no trace)."""
        if entries[0] >= len(self._log_visited):  # indexed since: a reader of the same RunDir refreshed the log
            self._log_visited.extend(bytes(entries[0] + 1 - len(self._log_visited)))
        self._check = not self._log_visited[entries[0]] and self.verify
        self._log_visited[entries[0]] = 1
        self._entries = entries
        self._artifacts.next_trial()
        out = TrialRead(tid)
        self._add_logged(tid, out)
        out.artifacts_ok = self._artifacts_ok(out.attempts)
        return out

    def _log_entries(self, tid: str) -> list[int]:
        if (looked_up := self._looked_up.pop(tid, None)) is not None:
            return looked_up
        return log.entries(tid) if (log := self.log()) is not None and len(log) else []

    def _logged(self, attempt: int) -> bool:
        """The trial being read has a line for ``attempt`` in the log."""
        return (log := self._log) is not None and any(log.attempt(i) == attempt for i in self._entries)

    def _add_logged(self, tid: str, out: TrialRead) -> None:
        """The trial's results in the log, each attempt's first line, checked (scan_log.first_lines),
        after any result file of another attempt, in the order of the attempts."""
        log = self._log
        if log is None or not self._entries:
            return
        first = first_lines(log, tid, self._entries, check=self._check, checked=self._firsts, problem=self._problem)
        if self._check:
            self.checked += len(first)
        # a result file of the same attempt is read instead (a mixed run is refused)
        have = {a.attempt for a in out.attempts} if out.attempts else ()
        for n, i, key, data, digest in first:
            if n in have:
                continue
            r = self._parse(tid, str(n), data, f"{self.root}/{LOG} (byte {log.offset(i)})")
            if r is not None:
                out.attempts.append(r)
                out.result_digests.append((key, digest))
                out.raws.append(data)
        if have and len(out.attempts) > len(have):
            rows = sorted(zip(out.attempts, out.result_digests, out.raws), key=lambda p: p[0].attempt)
            out.attempts, out.result_digests, out.raws = (list(col) for col in zip(*rows))

    def _parse(self, tid: str, attempt_name: str, raw: bytes, path: Path | str) -> Attempt | None:
        """Parse one result; with ``verify`` a damaged one or a missing artifact is a problem."""
        if not self._check:
            return decode_result(raw, path)
        try:
            r = decode_result(raw, path)
        except IntegrityError as e:
            self._problem((RESULT, tid, attempt_name, 0), str(e))
            return None
        for i, (name, digest) in enumerate(r.artifacts.items(), 1):
            if not self._artifacts.exists(digest):
                self._problem((RESULT, tid, attempt_name, i),
                              f"artifact {name} of {r.trial_id} attempt {r.attempt} is missing ({digest[:12]})")
        return r

    def _artifacts_ok(self, attempts: list[Attempt]) -> bool:
        if len(attempts) == 1 and not attempts[0].artifacts:  # the common case, once per trial at 10^6
            return True
        return all(self._artifacts.exists(d) for a in attempts for d in a.artifacts.values())

    def _problem(self, key: tuple[Any, ...], text: str) -> None:
        self._problems.append((key, text))

    # ------------------------------------------------------------------ the rest of the run
    def finish(self) -> tuple[int, list[str]]:
        """Check what no trial scan covered (:func:`assay.store.scan_rest.check_rest`); (files
        checked, problems in verify's order)."""
        if not self.verify:
            return self.checked, []
        log = self.log()
        self.checked += check_rest(self.rd, self.sealed, log, self._live, self._problem, outputs=self.outputs,
                                   prehashed=self._prehash)
        if log is not None and self._seals_from is not None:
            seals = self._seals_from.seals()
            check_seals(log, seals, self._firsts, self._problem)
            self.checked += len(seals.missing)
        return self.checked, [text for _key, text in sorted(self._problems, key=lambda p: p[0])]


#: PROCESSES_FROM and workers_wanted are the reading processes' (store/scan_workers.py), named here too
__all__ = ["LOAD_FILES", "PROCESSES_FROM", "RunScan", "TrialRead", "workers_wanted"]
