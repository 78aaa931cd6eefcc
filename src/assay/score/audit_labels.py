"""A person's verdicts on suspect passes, applied: the one function `assay audit RUN --label` and
the viewer's audit queue both call, so a label from either writes the same files."""

from __future__ import annotations

from pathlib import Path

from assay.errors import UsageError
from assay.score.labels import write_labels
from assay.score.trial_sight import screen_scanned
from assay.score.versions import write_score
from assay.store.rundir import RunDir


def label_suspects(run_dir: Path | str, labels: dict[str, bool], *, by: str) -> tuple[Path, Path]:
    """Write ``labels`` (suspect trial id -> a true pass?) as a new label file and score the run
    into a new score version; returns (label file, score file). Only the run's suspect passes can
    be labelled, and who labels is recorded."""
    known = {s.trial_id for s in screen_scanned(RunDir.open(run_dir))}
    unknown = sorted(set(labels) - known)
    if unknown:
        raise UsageError(f"{unknown}: not suspect passes of this run; suspects: {sorted(known)}")
    if not by.strip():
        raise UsageError("a label needs who labels (recorded with the labels): --by NAME")
    if not labels:
        raise UsageError("no label given")
    written = write_labels(run_dir, labels, by=by)
    return written, write_score(run_dir)
