"""Recovery under tool faults: the figures computed from a run's results (docs/recovery.md)."""

from assay.recovery.figures import RecoveryFigures, RecoveryRow, recovery_figures, recovery_of_run, render_markdown

__all__ = ["RecoveryFigures", "RecoveryRow", "recovery_figures", "recovery_of_run", "render_markdown"]
