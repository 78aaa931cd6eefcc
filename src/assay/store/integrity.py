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
from assay.store.rundir import LEDGER, MANIFEST, RunDir
from assay.store.scan import RunScan

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


def run_digest(path: Path | str, *, ledger_bytes: int | None = None) -> str:
    """One digest over the manifest and the whole ledger, as ``sha256:<hex>``; with
    ``ledger_bytes``, the digest the run had when its ledger was that long (the ledger is only ever
    appended to, so an unchanged start gives the digest recorded then)."""
    root = Path(path)
    h = hashlib.sha256(b"assay-run-digest-v1\n")
    for name in (MANIFEST, LEDGER):
        p = root / name
        if not p.is_file():
            digest = "missing"
        elif name == LEDGER and ledger_bytes is not None:
            digest = _head_digest(p, ledger_bytes)
        else:
            digest = sha256_file(p)
        h.update(f"{name}:{digest}\n".encode())
    return DIGEST_PREFIX + h.hexdigest()


def _head_digest(path: Path, size: int) -> str:
    """SHA-256 of the file's first ``size`` bytes, read in chunks ("shorter" when it has fewer)."""
    h = hashlib.sha256()
    left = size
    with open(path, "rb") as f:
        while left and (chunk := f.read(min(left, 1 << 20))):
            h.update(chunk)
            left -= len(chunk)
    return "shorter" if left else h.hexdigest()


def check_expected(report: IntegrityReport, expected: str) -> None:
    """Add a problem to ``report`` when its run digest is not ``expected`` (prefix optional)."""
    want = expected.strip().lower()
    if not want.startswith(DIGEST_PREFIX):
        want = DIGEST_PREFIX + want
    if report.digest != want:
        report.problems.append(f"run digest {report.digest} != expected {want}: the manifest or the ledger was "
                               "rewritten, or this is another run (or the run was resumed since the digest was recorded)")


def verify_run(path: Path | str, *, expect: str | None = None, workers: int | None = None) -> IntegrityReport:
    """Recompute every digest in the run directory; never modifies anything (one pass per trial:
    :class:`~assay.store.scan.RunScan`, its reading spread over ``workers`` processes: None, one
    per core for a large run, or ``ASSAY_SCAN_WORKERS``)."""
    rd = RunDir.open(path)
    report = IntegrityReport(digest=run_digest(rd.path))
    scan = RunScan(rd, workers=workers)
    for _read in scan.trials(scan.all_trials()):
        pass
    report.checked, report.problems = scan.finish()
    if expect is not None:
        check_expected(report, expect)
    return report


def require_intact(path: Path | str, *, action: str) -> None:
    """Refuse ``action`` (exit 3) when the run directory fails :func:`verify_run`."""
    report = verify_run(path)
    if not report.ok:
        raise refusal(path, report.problems, action=action)


def refusal(path: Path | str, problems: list[str], *, action: str) -> IntegrityError:
    """The one wording of a refusal (exit 3) that lists every problem found."""
    return IntegrityError(f"{path}: the run directory fails its integrity check; refusing to {action}:\n  - "
                          + "\n  - ".join(problems))
