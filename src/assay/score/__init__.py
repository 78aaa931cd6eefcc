"""Score: strict/safe pass, danger, pass@1, pass^k, pass@k, Wilson intervals, macro-averages with
frozen weights, the capability score, the security gate and the five efficiency figures.

Reads only the run directory; never runs anything. Every scoring is a new score version.

The names below are read from their modules on first use (PEP 562): a scan's reading process
imports :mod:`assay.score.trial_sight` and what it needs, not the whole scorer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._optional import lazy_names

#: public name -> the module of this package that defines it
_FROM: dict[str, str] = {
    "SCORE_SCHEMA": "engine", "SCORER_VERSION": "engine", "check_integrity": "engine", "score_run": "engine",
    "score_trials": "engine", "TraceFacts": "trials", "TrialFacts": "trials", "fold_trial": "trials",
    "register_trajectory_kind": "trials", "read_score": "versions", "score_files": "versions",
    "write_score": "versions",
}
__all__ = ["SCORER_VERSION", "SCORE_SCHEMA", "TraceFacts", "TrialFacts", "check_integrity", "fold_trial",
           "read_score", "register_trajectory_kind", "score_files", "score_run", "score_trials", "write_score"]

if TYPE_CHECKING:
    from assay.score.engine import SCORE_SCHEMA, SCORER_VERSION, check_integrity, score_run, score_trials
    from assay.score.trials import TraceFacts, TrialFacts, fold_trial, register_trajectory_kind
    from assay.score.versions import read_score, score_files, write_score


__getattr__ = lazy_names("assay.score", {name: f"assay.score.{module}" for name, module in _FROM.items()})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
