"""Score: strict/safe pass, danger, pass@1, pass^k, pass@k, Wilson intervals, macro-averages with
frozen weights, the capability score, the security gate and the five efficiency figures.

Reads only the run directory; never runs anything. Every scoring is a new score version.
"""

from assay.score.engine import SCORE_SCHEMA, SCORER_VERSION, check_integrity, score_run, score_trials
from assay.score.trials import TraceFacts, TrialFacts, fold_trial, register_trajectory_kind
from assay.score.versions import read_score, score_files, write_score

__all__ = ["SCORE_SCHEMA", "SCORER_VERSION", "TraceFacts", "TrialFacts", "check_integrity", "fold_trial",
           "read_score", "register_trajectory_kind", "score_files", "score_run", "score_trials", "write_score"]
