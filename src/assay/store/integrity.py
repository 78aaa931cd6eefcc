"""``assay verify``: recompute every digest of a run directory and report what changed.

Three kinds of evidence are checked:
- every file sealed in the ledger (manifest, result files, traces) still has its sealed digest;
- every result file on disk is in the ledger (a result added by hand is as suspect as one edited);
- every artifact's content still hashes to its name.
Derived files (index, reports) are not evidence and are not checked; score files are checked
against the digests recorded when they were written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assay.spec.digest import sha256_file
from assay.store.rundir import ARTIFACTS, MANIFEST, TRIALS, RunDir


@dataclass
class IntegrityReport:
    checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_run(path: Path | str) -> IntegrityReport:
    """Recompute every digest in the run directory; never modifies anything."""
    rd = RunDir.open(path)
    report = IntegrityReport()
    sealed = rd.ledger()
    if MANIFEST not in sealed:
        report.problems.append(f"{MANIFEST}: not sealed in the ledger")
    for rel, digest in sorted(sealed.items()):
        p = rd.path / rel
        report.checked += 1
        if not p.exists():
            report.problems.append(f"{rel}: deleted after it was written")
            continue
        actual = sha256_file(p)
        if actual != digest:
            if rel.endswith("trace.jsonl") and _trace_grew_only(p, digest):
                continue  # an attempt in flight appends to the trace; earlier content is intact
            report.problems.append(f"{rel}: modified after it was written (sha256 {actual[:12]} != sealed {digest[:12]})")
    trials = rd.path / TRIALS
    if trials.is_dir():
        for res in sorted(trials.glob("*/attempts/*/result.json")):
            rel = res.relative_to(rd.path).as_posix()
            if rel not in sealed:
                report.problems.append(f"{rel}: result file not in the ledger (added after the run?)")
    art_root = rd.path / ARTIFACTS / "sha256"
    if art_root.is_dir():
        for art in sorted(art_root.glob("*/*")):
            if art.name.startswith(".tmp-"):
                continue
            report.checked += 1
            if sha256_file(art) != art.name:
                report.problems.append(f"{art.relative_to(rd.path).as_posix()}: content does not match its digest")
    for res in rd.iter_results():
        for name, digest in res.artifacts.items():
            if not rd.artifact_path(digest).exists():
                report.problems.append(f"artifact {name} of {res.trial_id} attempt {res.attempt} is missing ({digest[:12]})")
    return report


def _trace_grew_only(path: Path, sealed: str) -> bool:
    """True if some prefix of the trace (ending at a line boundary) has the sealed digest."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for line in f:
            h.update(line)
            if h.copy().hexdigest() == sealed:
                return True
    return False
