"""The run directory: the source of truth of a run (laws 3 and 4).

Layout::

    RUN_DIR/
      manifest.json                       written once, before any trial
      ledger.jsonl                        append-only: digest of every evidence file when sealed
      trials/<trial_id>/trace.jsonl       one trace per trial, all attempts, sequenced
      trials/<trial_id>/attempts/<n>/started.json   written when attempt n begins
      trials/<trial_id>/attempts/<n>/result.json    the immutable result of attempt n
      results.jsonl                       instead of result files, with ``--results log``: a line
                                          per result (:mod:`assay.store.results_log`)
      artifacts/sha256/<2 hex>/<digest>   content-addressed artifacts (stdout, sessions, ...)
      scores/score-<NNNN>.json            score versions (never overwritten)
      reports/                            derived, rebuildable
      index.sqlite                        derived, rebuildable

Result files are created exclusively: writing a second result for the same attempt is an
error, never an overwrite. A run whose results are in the log reads and writes them there; every
reader here takes a result from either place, so a run mixing both (a log added by hand) reads
as it is on disk, and `assay verify` names what the ledger never sealed.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator


from assay.errors import IntegrityError, RunDirError
from assay.records.manifest import RunManifest
from assay.records.results import AttemptResult
from assay.spec.digest import sha256_bytes, sha256_file
from assay.store import results_log
from assay.store.ledger_index import damaged_lines, iter_lines, last_record_of
from assay.store.ledger_line import LEDGER, damage_text, ledger_record
from assay.untrusted.tree import walk_untrusted
from assay.untrusted.numeral import decimal

MANIFEST = "manifest.json"
TRIALS = "trials"
ARTIFACTS = "artifacts"
SCORES = "scores"
#: a person's labels of suspect passes in ``scores/`` (score/labels.py), each sealed when written
LABEL_FILE = re.compile(r"labels-([0-9]{4,})\.json")
REPORTS = "reports"
INDEX = "index.sqlite"


def write_exclusive(path: Path, data: bytes, *, before_link: Callable[[], None] | None = None) -> None:
    """Write ``data`` to ``path`` atomically; fail if ``path`` already exists.

    ``before_link`` runs once the bytes are safely on disk and just before the file appears
    (the ledger line is written there: a full disk stops before either exists)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if before_link is not None:
            before_link()
        os.link(tmp, path)  # atomic, and refuses to replace an existing file
    except FileExistsError:
        raise RunDirError(f"{path} already exists; evidence is never overwritten") from None
    finally:
        os.unlink(tmp)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def read_result(path: Path) -> AttemptResult:
    """Parse a result file; truncated or edited JSON raises :class:`IntegrityError` naming the file."""
    return parse_result(path.read_bytes(), path)


def parse_result(data: bytes, path: Path) -> AttemptResult:
    """Parse the bytes of the result file at ``path`` (already read, e.g. to hash the same bytes)."""
    try:
        return AttemptResult.model_validate_json(data)
    except ValueError as e:
        raise IntegrityError(f"{path}: damaged result file, not a valid attempt result ({_first_line(e)}); "
                             "run `assay verify` on the run directory") from None


def trial_files(trial_dir: Path) -> list[Path]:
    """Every regular file of a trial folder (temporary files of an unfinished write excluded)."""
    if not trial_dir.is_dir():
        return []
    out = []
    for rel, full, st in walk_untrusted(trial_dir, max_entries=None, deadline_s=None):  # no recursion: a tampered folder may nest deep
        if st is not None and stat.S_ISREG(st.st_mode) and not os.path.basename(rel).startswith(b".tmp-"):
            out.append(Path(os.fsdecode(full)))
    return sorted(out)


def is_disk_full(e: BaseException) -> bool:
    """True for the errors of a disk that cannot take more (no space, quota): they stop the run,
    they are not the trial's failure."""
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


class RunDir:
    """Reads and appends to one run directory."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self._artifact_root: str | None = None  # artifact_file's folder, as a string
        self._manifest_seen: tuple[str, RunManifest] | None = None  # (sha256 of the bytes, their parse)
        self._sealed: dict[str, str] | None = None  # ledger cache of this writer (one runner per run dir)
        self._log: results_log.LogIndex | None = None  # where the log's results are (refreshed as it grows)

    # ------------------------------------------------------------------ creation / opening
    @classmethod
    def create(cls, path: Path | str, manifest: RunManifest) -> "RunDir":
        rd = cls(path)
        if rd.path.exists() and not rd.path.is_dir():
            raise RunDirError(f"{rd.path} is a file, not a folder; choose a new --out (a folder assay makes)")
        if rd.path.exists() and any(rd.path.iterdir()):
            raise RunDirError(f"{rd.path} exists and is not empty; choose a new --out or use --resume")
        try:
            rd.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunDirError(f"{rd.path}: cannot be made ({e.strerror}: a file stands on its way or the folder "
                              "is not writable); choose another --out") from None
        data = (manifest.model_dump_json(indent=2) + "\n").encode()
        write_exclusive(rd.path / MANIFEST, data, before_link=lambda: rd._record(MANIFEST, sha256_bytes(data)))
        for sub in (TRIALS, ARTIFACTS, SCORES):
            (rd.path / sub).mkdir(exist_ok=True)
        if manifest.plan.results == "log":
            (rd.path / results_log.LOG).touch(exist_ok=False)  # the run's results go there (writer and readers)
        return rd

    @classmethod
    def open(cls, path: "Path | str | RunDir") -> "RunDir":
        """The run directory at ``path`` (a RunDir given is returned as it is: one reader's manifest
        parsed once, its log indexed once, however many readers it is handed to)."""
        if isinstance(path, RunDir):
            return path
        rd = cls(path)
        if not (rd.path / MANIFEST).is_file():
            raise RunDirError(f"{rd.path} is not a run directory (no {MANIFEST}); pass the folder `assay run` printed")
        return rd

    def manifest(self, *, check_sealed: bool = True) -> RunManifest:
        """The run manifest; refused (exit 3) if it differs from the digest sealed when it was written,
        so a hand-edited plan is never resumed, scored or shown as if it were the run's. Read and
        checked at every call; the same bytes are parsed once per RunDir (a report at 10^6 trials
        asked four times, a third of a second each): the one object is returned, not to be changed."""
        path = self.path / MANIFEST
        try:
            data = path.read_bytes()
        except OSError as e:
            raise RunDirError(f"{path}: cannot be read: {e.strerror}") from None
        digest = sha256_bytes(data)
        if check_sealed:
            sealed = self.sealed_digest(MANIFEST)
            if sealed is None:
                raise IntegrityError(f"{path}: not sealed in {LEDGER}; the run directory is damaged (see `assay verify`)")
            if digest != sealed:
                raise IntegrityError(f"{path}: changed since it was written (sha256 {digest[:12]} != "
                                     f"sealed {sealed[:12]}); refused (see `assay verify`)")
        seen = self._manifest_seen
        if seen is not None and seen[0] == digest:  # the same bytes, read and checked again: parsed once
            return seen[1]
        try:
            manifest = RunManifest.model_validate_json(data)
        except ValueError as e:
            raise IntegrityError(f"{path}: cannot be read as a run manifest: {_first_line(e)}") from None
        self._manifest_seen = (digest, manifest)
        return manifest

    # ------------------------------------------------------------------ ledger
    def seal(self, rel: str, extra: dict[str, Any] | None = None) -> str:
        """Record the current digest of an evidence file in the append-only ledger."""
        digest = sha256_file(self.path / rel)
        self._record(rel, digest, extra)
        return digest

    def seal_written(self, rel: str, digest: str) -> None:
        """Record the digest of a file this process wrote, hashed as it was written (a score's rows:
        765 MB at 10^6 trials, not read again to be sealed)."""
        self._record(rel, digest)

    def _record(self, rel: str, digest: str, extra: dict[str, Any] | None = None) -> None:
        """Append one ledger line. Written *before* a new file is linked into place, so a crash
        between the two leaves a sealed digest for a missing file (closed on resume), never an
        unsealed file that looks added by hand."""
        line = json.dumps({"path": rel, "sha256": digest, "ts": time.time(), **(extra or {})}, sort_keys=True)
        results_log.append_line(self.path / LEDGER, line.encode())  # a torn last line is fenced off, never extended
        if self._sealed is not None:
            self._sealed[rel] = digest

    def reseal(self, rel: str, digest: str, extra: dict[str, Any]) -> None:
        """Record a digest already proven for ``rel`` (a torn line's repair; ``extra`` says why)."""
        self._record(rel, digest, extra)

    def ledger(self) -> dict[str, str]:
        """Latest sealed digest per path (a torn last line from a killed runner is ignored)."""
        out: dict[str, str] = {}
        p = self.path / LEDGER
        if not p.exists():
            return out
        for _n, line in iter_lines(p):  # never the whole ledger in memory (10^6 lines at 10^6 trials)
            rec = ledger_record(line)
            if rec is not None:
                out[rec[0]] = rec[1]
        return out

    def sealed_digest(self, rel: str) -> str | None:
        """``ledger().get(rel)`` without indexing the whole ledger (10^6 lines at 10^6 trials)."""
        return last_record_of(self.path / LEDGER, rel, ledger_record)

    def ledger_damage(self) -> list[str]:
        """Ledger lines that are JSON but not a record of one path and its digest. A line that is
        not JSON at all is a torn write of a killed runner (fenced by the next write), not damage."""
        return [damage_text(n, line) for n, line in damaged_lines(self.path / LEDGER, ledger_record)]

    # ------------------------------------------------------------------ trials and attempts
    def trial_dir(self, trial_id: str) -> Path:
        return self.path / TRIALS / trial_id

    def trace_path(self, trial_id: str) -> Path:
        return self.trial_dir(trial_id) / "trace.jsonl"

    def attempt_dir(self, trial_id: str, attempt: int) -> Path:
        return self.trial_dir(trial_id) / "attempts" / str(attempt)

    def attempts_of(self, trial_id: str) -> list[int]:
        """The trial's attempts: its numbered attempt folders, and its results in the log."""
        d = self.trial_dir(trial_id) / "attempts"
        found = [n for p in d.iterdir() if (n := decimal(p.name)) is not None] if d.is_dir() else []  # "1" and "01" both
        log = self.results_log()
        if log is not None:
            found += {log.attempt(i) for i in log.entries(trial_id, mark=False)}.difference(found)
        return sorted(found)

    def uses_log(self) -> bool:
        """Whether this run's results are written to the results log (``--results log``)."""
        return results_log.is_log(self.path / results_log.LOG)

    def share_log(self, index: results_log.LogIndex) -> None:
        """Take a scan's index of this run's log (a 10^6-line log is indexed once, not once per reader)."""
        if self._log is None:
            self._log = index

    def results_log(self) -> results_log.LogIndex | None:
        """The results log indexed as it is now (None: the run has none)."""
        if not self.uses_log():
            return None
        if self._log is None:
            self._log = results_log.LogIndex(self.path)
        else:
            self._log.refresh()
        return self._log

    def mark_started(self, trial_id: str, attempt: int, info: dict[str, Any]) -> None:
        path = self.attempt_dir(trial_id, attempt) / "started.json"
        data = json.dumps({"ts": time.time(), **info}, sort_keys=True).encode()
        rel = path.relative_to(self.path).as_posix()
        write_exclusive(path, data, before_link=lambda: self._record(rel, sha256_bytes(data)))

    def started_info(self, trial_id: str, attempt: int) -> dict[str, Any] | None:
        p = self.attempt_dir(trial_id, attempt) / "started.json"
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except ValueError:
            return {}

    def write_result(self, result: AttemptResult) -> Path:
        """Write an attempt's result and seal everything of its trial as it is now.

        The trace and every other file of the trial (service recordings, approvals...) are sealed
        *before* the result appears: once a trial's last attempt has a result, nothing of it may
        change, and `assay verify` checks exactly that."""
        if self.uses_log():
            return self._append_result(result)
        rel = f"{TRIALS}/{result.trial_id}/attempts/{result.attempt}/result.json"
        data = (result.model_dump_json(indent=2) + "\n").encode()
        if (self.path / rel).exists():
            raise RunDirError(f"{self.path / rel} already exists; evidence is never overwritten")
        self.seal_trial(result.trial_id, attempt=result.attempt)
        write_exclusive(self.path / rel, data, before_link=lambda: self._record(rel, sha256_bytes(data)))
        return self.path / rel

    def _append_result(self, result: AttemptResult) -> Path:
        """:meth:`write_result` into the results log: sealed first, then appended (see results_log)."""
        if self.result(result.trial_id, result.attempt) is not None:
            raise RunDirError(f"{self.path / results_log.LOG}: attempt {result.attempt} of {result.trial_id} already "
                              "has a result; evidence is never overwritten")
        data = result.model_dump_json().encode()
        self.seal_trial(result.trial_id, attempt=result.attempt)
        self._record(results_log.log_key(result.trial_id, result.attempt), sha256_bytes(data))
        results_log.append(self.path, data)
        return self.path / results_log.LOG

    def seal_trial(self, trial_id: str, *, attempt: int) -> None:
        """Seal every file of a trial whose current digest is not the one already sealed."""
        if self._sealed is None:
            self._sealed = self.ledger()
        sealed = self._sealed
        for p in trial_files(self.trial_dir(trial_id)):
            rel = p.relative_to(self.path).as_posix()
            digest = sha256_file(p)
            if sealed.get(rel) != digest:
                self._record(rel, digest, {"attempt": attempt})

    def result(self, trial_id: str, attempt: int) -> AttemptResult | None:
        """One attempt's result; a file that does not parse is damaged evidence (exit 3, named)."""
        found = self.result_bytes(trial_id, attempt)
        return None if found is None else parse_result(*found)

    def result_bytes(self, trial_id: str, attempt: int) -> tuple[bytes, Path] | None:
        """One attempt's result as bytes, and where they are (the file, or the log and the byte its
        line starts at) for a reader's error: :meth:`result` parses them, a reader of many results
        may decode them faster (``store/fastread.decode_result``)."""
        p = self.attempt_dir(trial_id, attempt) / "result.json"
        if p.exists():
            return p.read_bytes(), p
        log = self.results_log()
        if log is None:
            return None
        for i in log.entries(trial_id, mark=False):  # the first line of an attempt is its result (a repeat is named by verify)
            if log.attempt(i) == attempt:
                return log.read(i), Path(f"{self.path / results_log.LOG} (byte {log.offset(i)})")
        return None

    def results(self) -> list[AttemptResult]:
        """Every attempt result in the run, ordered by trial then attempt."""
        return list(self.iter_results())

    def trial_ids(self) -> list[str]:
        """Every trial with a folder or a result in the log, sorted."""
        root = self.path / TRIALS
        ids = {p.name for p in root.iterdir()} if root.is_dir() else set()
        log = self.results_log()
        if log is not None:
            ids.update(log.trial_ids())
        return sorted(ids)

    def iter_results(self) -> Iterator[AttemptResult]:
        for tid in self.trial_ids():
            for n in self.attempts_of(tid):
                r = self.result(tid, n)
                if r is not None:
                    yield r

    # ------------------------------------------------------------------ artifacts
    def put_artifact(self, data: bytes) -> str:
        """Store bytes by their SHA-256; returns the digest. Storing twice is a no-op."""
        digest = sha256_bytes(data)
        dest = self.artifact_path(digest)
        if not dest.exists():
            try:
                write_exclusive(dest, data)
            except RunDirError:
                pass  # another writer stored the same content first
        return digest

    def put_artifact_file(self, path: Path) -> str:
        return self.put_artifact(path.read_bytes())

    def artifact_path(self, digest: str) -> Path:
        return self.path / ARTIFACTS / "sha256" / digest[:2] / digest

    def artifact_file(self, digest: str) -> str:
        """:meth:`artifact_path` as a string, built without a Path (asked once a passing trial when a
        run is screened: pathlib's joins were a third of the screen's time in the checking process)."""
        root = self._artifact_root
        if root is None:
            root = self._artifact_root = os.path.join(str(self.path), ARTIFACTS, "sha256")
        return os.path.join(root, digest[:2], digest)

    def read_artifact(self, digest: str) -> bytes:
        return self.artifact_path(digest).read_bytes()

