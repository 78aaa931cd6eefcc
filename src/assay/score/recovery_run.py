"""Recovery under tool and process faults: the figures of a run (docs/recovery.md).

The figures are computed by the scorer (:mod:`assay.score.recovery`) and carried by the score
document; this room reads them from there, so ``assay recovery`` and the report show one truth.
"""

from __future__ import annotations

from pathlib import Path

from assay.records.scores import RecoveryFigures
from assay.score.recovery import recovery_figures, render_markdown

__all__ = ["recovery_figures", "recovery_of_run", "render_markdown"]


def recovery_of_run(run_dir: Path | str) -> RecoveryFigures:
    """The recovery figures of a run directory, as its score document carries them (integrity
    checked, scored in memory, nothing written)."""
    from assay.score.engine import score_figures

    return score_figures(run_dir).recovery
