"""The run directory: the source of truth of a run (laws 3 and 4).

Layout::

    RUN_DIR/
      manifest.json                       written once, before any trial
      ledger.jsonl                        append-only: digest of every evidence file when sealed
      trials/<trial_id>/trace.jsonl       one trace per trial, all attempts, sequenced
      trials/<trial_id>/attempts/<n>/started.json   written when attempt n begins
      trials/<trial_id>/attempts/<n>/result.json    the immutable result of attempt n
      artifacts/sha256/<2 hex>/<digest>   content-addressed artifacts (stdout, sessions, ...)
      scores/score-<NNNN>.json            score versions (never overwritten)
      reports/                            derived, rebuildable
      index.sqlite                        derived, rebuildable

Result files are created exclusively: writing a second result for the same attempt is an
error, never an overwrite.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from assay.errors import RunDirError
from assay.spec.digest import sha256_bytes, sha256_file
from assay.spec.manifest import RunManifest
from assay.spec.results import AttemptResult

MANIFEST = "manifest.json"
LEDGER = "ledger.jsonl"
TRIALS = "trials"
ARTIFACTS = "artifacts"
SCORES = "scores"
REPORTS = "reports"
INDEX = "index.sqlite"


def write_exclusive(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically; fail if ``path`` already exists."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
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


class RunDir:
    """Reads and appends to one run directory."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    # ------------------------------------------------------------------ creation / opening
    @classmethod
    def create(cls, path: Path | str, manifest: RunManifest) -> "RunDir":
        rd = cls(path)
        if rd.path.exists() and any(rd.path.iterdir()):
            raise RunDirError(f"{rd.path} exists and is not empty; choose a new --out or use --resume")
        rd.path.mkdir(parents=True, exist_ok=True)
        data = (manifest.model_dump_json(indent=2) + "\n").encode()
        rd._record(MANIFEST, sha256_bytes(data))
        write_exclusive(rd.path / MANIFEST, data)
        for sub in (TRIALS, ARTIFACTS, SCORES):
            (rd.path / sub).mkdir(exist_ok=True)
        return rd

    @classmethod
    def open(cls, path: Path | str) -> "RunDir":
        rd = cls(path)
        if not (rd.path / MANIFEST).is_file():
            raise RunDirError(f"{rd.path} is not a run directory (no {MANIFEST}); pass the folder `assay run` printed")
        return rd

    def manifest(self) -> RunManifest:
        try:
            return RunManifest.model_validate_json((self.path / MANIFEST).read_text())
        except (OSError, ValueError) as e:
            raise RunDirError(f"{self.path / MANIFEST}: cannot be read as a run manifest: {e}") from None

    # ------------------------------------------------------------------ ledger
    def seal(self, rel: str, extra: dict[str, Any] | None = None) -> str:
        """Record the current digest of an evidence file in the append-only ledger."""
        digest = sha256_file(self.path / rel)
        self._record(rel, digest, extra)
        return digest

    def _record(self, rel: str, digest: str, extra: dict[str, Any] | None = None) -> None:
        """Append one ledger line. Written *before* a new file is linked into place, so a crash
        between the two leaves a sealed digest for a missing file (closed on resume), never an
        unsealed file that looks added by hand."""
        line = json.dumps({"path": rel, "sha256": digest, "ts": time.time(), **(extra or {})}, sort_keys=True)
        with open(self.path / LEDGER, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def ledger(self) -> dict[str, str]:
        """Latest sealed digest per path (a torn last line from a killed runner is ignored)."""
        out: dict[str, str] = {}
        p = self.path / LEDGER
        if not p.exists():
            return out
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
                out[rec["path"]] = rec["sha256"]
            except (ValueError, KeyError, TypeError):
                continue
        return out

    # ------------------------------------------------------------------ trials and attempts
    def trial_dir(self, trial_id: str) -> Path:
        return self.path / TRIALS / trial_id

    def trace_path(self, trial_id: str) -> Path:
        return self.trial_dir(trial_id) / "trace.jsonl"

    def attempt_dir(self, trial_id: str, attempt: int) -> Path:
        return self.trial_dir(trial_id) / "attempts" / str(attempt)

    def attempts_of(self, trial_id: str) -> list[int]:
        d = self.trial_dir(trial_id) / "attempts"
        if not d.is_dir():
            return []
        return sorted(int(p.name) for p in d.iterdir() if p.name.isdigit())

    def mark_started(self, trial_id: str, attempt: int, info: dict[str, Any]) -> None:
        write_exclusive(self.attempt_dir(trial_id, attempt) / "started.json",
                        json.dumps({"ts": time.time(), **info}, sort_keys=True).encode())

    def started_info(self, trial_id: str, attempt: int) -> dict[str, Any] | None:
        p = self.attempt_dir(trial_id, attempt) / "started.json"
        if not p.exists():
            return None
        try:
            return json.loads(p.read_text())
        except ValueError:
            return {}

    def write_result(self, result: AttemptResult) -> Path:
        rel = f"{TRIALS}/{result.trial_id}/attempts/{result.attempt}/result.json"
        data = (result.model_dump_json(indent=2) + "\n").encode()
        if (self.path / rel).exists():
            raise RunDirError(f"{self.path / rel} already exists; evidence is never overwritten")
        self._record(rel, sha256_bytes(data))
        write_exclusive(self.path / rel, data)
        trace = self.trace_path(result.trial_id)
        if trace.exists():
            self.seal(trace.relative_to(self.path).as_posix(), {"attempt": result.attempt})
        return self.path / rel

    def result(self, trial_id: str, attempt: int) -> AttemptResult | None:
        p = self.attempt_dir(trial_id, attempt) / "result.json"
        if not p.exists():
            return None
        return AttemptResult.model_validate_json(p.read_text())

    def results(self) -> list[AttemptResult]:
        """Every attempt result in the run, ordered by trial then attempt."""
        return list(self.iter_results())

    def iter_results(self) -> Iterator[AttemptResult]:
        root = self.path / TRIALS
        if not root.is_dir():
            return
        for tdir in sorted(root.iterdir()):
            for n in self.attempts_of(tdir.name):
                r = self.result(tdir.name, n)
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

    def read_artifact(self, digest: str) -> bytes:
        return self.artifact_path(digest).read_bytes()
