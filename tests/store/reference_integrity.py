"""The reading and checking of a run directory as it was before the one-pass scan (main at 7daa9c5),
kept verbatim as the oracle of the differential tests: the scan must report the same problems,
in the same order, and the scorer must give the same document or the same refusal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator

from assay.errors import IntegrityError
from assay.records.manifest import RunManifest
from assay.records.results import AttemptResult
from assay.records.scores import ScoreDocument
from assay.score.engine import ScoreInputs, _audited, fold_on_disk, score_trials
from assay.score.screen import screen_run
from assay.score.trials import TrialFacts, missing_trial
from assay.spec.digest import sha256_bytes, sha256_file
from assay.store.integrity import IntegrityReport, run_digest
from assay.store.rundir import ARTIFACTS, MANIFEST, TRIALS, RunDir, read_result, trial_files


def reference_score_run(path: Path | str, *, keep_trials: bool = True, verify: bool = True) -> ScoreDocument:
    """The scorer before the scan: verify first, then read every result with pydantic."""
    rd = RunDir.open(path)
    if verify:
        report = verify_run(rd.path)
        if not report.ok:
            raise IntegrityError(f"{rd.path}: the run directory fails its integrity check; refusing to score:\n  - "
                                 + "\n  - ".join(report.problems))
    manifest = rd.manifest()
    inputs = ScoreInputs(manifest_sha256=sha256_file(rd.path / MANIFEST))
    doc = score_trials(manifest, iter_run_trials(rd, manifest, inputs), keep_trials=keep_trials, inputs=inputs)
    # the reward-hack screen and its labels, as a pass of its own (the scorer screens in its one pass)
    return _audited(doc, rd, screen_run(rd))


def iter_run_trials(rd: RunDir, manifest: RunManifest, inputs: ScoreInputs) -> Iterator[TrialFacts]:
    categories = {t.id: t.category for t in manifest.tasks}
    root = rd.path / TRIALS
    on_disk = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    planned = list(manifest.plan.trials)
    seen = set(planned)
    order = planned + [t for t in on_disk if t not in seen]
    disk = set(on_disk)
    for tid in order:
        attempts = _read_attempts(rd, tid, inputs) if tid in disk else []
        if not attempts:
            yield missing_trial(tid, categories)
            continue
        yield fold_on_disk(rd, tid, attempts, inputs)


def _read_attempts(rd: RunDir, trial_id: str, inputs: ScoreInputs) -> list[AttemptResult]:
    out = []
    for n in rd.attempts_of(trial_id):
        p = rd.attempt_dir(trial_id, n) / "result.json"
        if not p.exists():
            continue
        data = p.read_bytes()
        inputs.results[p.relative_to(rd.path).as_posix()] = sha256_bytes(data)
        out.append(AttemptResult.model_validate_json(data))
    return out


def ledger(rd: RunDir) -> dict[str, str]:
    out: dict[str, str] = {}
    p = rd.path / "ledger.jsonl"
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
            out[rec["path"]] = rec["sha256"]
        except (ValueError, KeyError, TypeError):
            continue
    return out


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
    sealed = ledger(rd)
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
    return report


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
