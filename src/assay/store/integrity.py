"""``assay verify``: recompute every digest of a run directory and report what changed.

What is checked:
- every file sealed in the ledger (manifest, started markers, result files, traces, service
  recordings, score files) still has its sealed digest;
- every file of a trial is in the ledger, and once a trial's last attempt has a result nothing
  of it may change: a trace may grow past its seal only while an attempt is in flight (its
  sealed started marker exists, its result does not);
- every result file parses, every artifact's content still hashes to its name, every artifact a
  result names exists.
Derived files (index, reports, the runner lock) are not evidence and are not checked.

The *run digest* is one digest over the manifest and the ledger. Recorded elsewhere (a CI log, a
release note), it catches what the ledger alone cannot: a file rewritten together with its
ledger line.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import IntegrityError
from assay.spec.digest import sha256_file
from assay.store.rundir import ARTIFACTS, LEDGER, MANIFEST, TRIALS, RunDir, read_result, trial_files

#: printed before the hex digest so a recorded digest says what it is
DIGEST_PREFIX = "sha256:"


@dataclass
class IntegrityReport:
    checked: int = 0
    problems: list[str] = field(default_factory=list)
    digest: str = ""  # the run digest (see :func:`run_digest`)

    @property
    def ok(self) -> bool:
        return not self.problems


def run_digest(path: Path | str) -> str:
    """One digest over the manifest and the whole ledger, as ``sha256:<hex>``."""
    root = Path(path)
    h = hashlib.sha256(b"assay-run-digest-v1\n")
    for name in (MANIFEST, LEDGER):
        p = root / name
        h.update(f"{name}:{sha256_file(p) if p.is_file() else 'missing'}\n".encode())
    return DIGEST_PREFIX + h.hexdigest()


def check_expected(report: IntegrityReport, expected: str) -> None:
    """Add a problem to ``report`` when its run digest is not ``expected`` (prefix optional)."""
    want = expected.strip().lower()
    if not want.startswith(DIGEST_PREFIX):
        want = DIGEST_PREFIX + want
    if report.digest != want:
        report.problems.append(f"run digest {report.digest} != expected {want}: the manifest or the ledger was "
                               "rewritten, or this is another run (or the run was resumed since the digest was recorded)")


def in_flight_trials(rd: RunDir, sealed: dict[str, str]) -> set[str]:
    """Trials whose last attempt has a sealed started marker and no result yet."""
    out: set[str] = set()
    root = rd.path / TRIALS
    if not root.is_dir():
        return out
    for tdir in root.iterdir():
        attempts = rd.attempts_of(tdir.name)
        if not attempts:
            continue
        adir = rd.attempt_dir(tdir.name, attempts[-1])
        started = (adir / "started.json").relative_to(rd.path).as_posix()
        if started in sealed and (adir / "started.json").is_file() and not (adir / "result.json").exists():
            out.add(tdir.name)
    return out


def verify_run(path: Path | str, *, expect: str | None = None) -> IntegrityReport:
    """Recompute every digest in the run directory; never modifies anything."""
    rd = RunDir.open(path)
    report = IntegrityReport(digest=run_digest(rd.path))
    sealed = rd.ledger()
    live = in_flight_trials(rd, sealed)
    if MANIFEST not in sealed:
        report.problems.append(f"{MANIFEST}: not sealed in the ledger")
    for rel, digest in sorted(sealed.items()):
        p = rd.path / rel
        report.checked += 1
        if not p.exists():
            report.problems.append(f"{rel}: deleted after it was written")
            continue
        actual = sha256_file(p)
        if actual == digest:
            continue
        if _trial_of(rel) in live and rel.endswith("/trace.jsonl") and _trace_grew_only(p, digest):
            continue  # the attempt in flight appends to its trace; what was sealed is intact
        report.problems.append(f"{rel}: modified after it was written (sha256 {actual[:12]} != sealed {digest[:12]})")
    _check_unsealed(rd, sealed, live, report)
    _check_results_and_artifacts(rd, report)
    if expect is not None:
        check_expected(report, expect)
    return report


def require_intact(path: Path | str, *, action: str) -> None:
    """Refuse ``action`` (exit 3) when the run directory fails :func:`verify_run`."""
    report = verify_run(path)
    if not report.ok:
        raise IntegrityError(f"{path}: the run directory fails its integrity check; refusing to {action}:\n  - "
                             + "\n  - ".join(report.problems))


def _trial_of(rel: str) -> str | None:
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == TRIALS else None


def _check_unsealed(rd: RunDir, sealed: dict[str, str], live: set[str], report: IntegrityReport) -> None:
    root = rd.path / TRIALS
    if not root.is_dir():
        return
    for tdir in sorted(root.iterdir()):
        if tdir.name in live:
            continue  # files of the attempt in flight are sealed when it ends
        for p in trial_files(tdir):
            rel = p.relative_to(rd.path).as_posix()
            if rel not in sealed:
                what = "result file" if p.name == "result.json" else "file"
                report.problems.append(f"{rel}: {what} not in the ledger (added after the run?)")


def _check_results_and_artifacts(rd: RunDir, report: IntegrityReport) -> None:
    art_root = rd.path / ARTIFACTS / "sha256"
    if art_root.is_dir():
        for art in sorted(art_root.glob("*/*")):
            if art.name.startswith(".tmp-"):
                continue
            report.checked += 1
            if sha256_file(art) != art.name:
                report.problems.append(f"{art.relative_to(rd.path).as_posix()}: content does not match its digest")
    root = rd.path / TRIALS
    if not root.is_dir():
        return
    for res in sorted(root.glob("*/attempts/*/result.json")):
        try:
            r = read_result(res)
        except IntegrityError as e:
            report.problems.append(str(e))
            continue
        for name, digest in r.artifacts.items():
            if not rd.artifact_path(digest).exists():
                report.problems.append(f"artifact {name} of {r.trial_id} attempt {r.attempt} is missing ({digest[:12]})")


def _trace_grew_only(path: Path, sealed: str) -> bool:
    """True if some prefix of the trace (ending at a line boundary) has the sealed digest."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            h.update(line)
            if h.copy().hexdigest() == sealed:
                return True
    return False
