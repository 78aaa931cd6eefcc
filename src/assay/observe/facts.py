"""Reading a run's trials as the scorer's facts: every export starts here, never from its own
re-reading of raw results, so exported numbers cannot disagree with `assay score`."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from assay.records.manifest import RunManifest
from assay.score.engine import ScoreInputs, check_integrity, fold_on_disk, iter_run_trials
from assay.score.trials import TrialFacts
from assay.store.rundir import RunDir


def trial_facts(rd: RunDir, trial_id: str) -> TrialFacts | None:
    """One trial folded from the attempts on disk, as :func:`iter_run_trials` folds it (None
    when no attempt has a result yet)."""
    attempts = [r for n in rd.attempts_of(trial_id) if (r := rd.result(trial_id, n)) is not None]
    return fold_on_disk(rd, trial_id, attempts) if attempts else None


def open_run(path: Path | str, *, verify: bool = True) -> tuple[RunDir, RunManifest]:
    """Open a run directory for export; like `assay score`, refuse one whose evidence changed."""
    rd = RunDir.open(path)
    if verify:
        check_integrity(rd.path)
    return rd, rd.manifest()


def run_trials(rd: RunDir, manifest: RunManifest) -> Iterator[TrialFacts]:
    """Every planned trial in plan order (a planned trial without a result is infra_error/missing)."""
    return iter_run_trials(rd, manifest, ScoreInputs())
