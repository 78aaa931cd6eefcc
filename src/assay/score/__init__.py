"""Score: strict/safe pass, danger, pass@1, pass^k, pass@k, Wilson intervals, macro-averages with
frozen weights, the capability score, the security gate and the five efficiency figures.

Reads only the run directory; never runs anything. Every scoring is a new score version.

The names below are imported on first use (PEP 562): a scan's reading process imports
:mod:`assay.score.trial_sight` and what it needs, not the whole scorer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: public name -> the module that defines it
_NAMES = {
    "SCORE_SCHEMA": "assay.score.engine", "SCORER_VERSION": "assay.score.engine",
    "check_integrity": "assay.score.engine", "score_run": "assay.score.engine", "score_trials": "assay.score.engine",
    "TraceFacts": "assay.score.trials", "TrialFacts": "assay.score.trials", "fold_trial": "assay.score.trials",
    "register_trajectory_kind": "assay.score.trials",
    "read_score": "assay.score.versions", "score_files": "assay.score.versions", "write_score": "assay.score.versions",
}
__all__ = ["SCORER_VERSION", "SCORE_SCHEMA", "TraceFacts", "TrialFacts", "check_integrity", "fold_trial",
           "read_score", "register_trajectory_kind", "score_files", "score_run", "score_trials", "write_score"]
assert sorted(__all__) == sorted(_NAMES)

if TYPE_CHECKING:
    from assay.score.engine import SCORE_SCHEMA, SCORER_VERSION, check_integrity, score_run, score_trials
    from assay.score.trials import TraceFacts, TrialFacts, fold_trial, register_trajectory_kind
    from assay.score.versions import read_score, score_files, write_score


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.score' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
