"""Run: the matrix, the trial lifecycle, executors and resume."""

from assay.run.plan import PlannedTrial, build_plan, trial_id
from assay.run.runner import RunOptions, RunOutcome, resume_run, start_run

__all__ = ["PlannedTrial", "RunOptions", "RunOutcome", "build_plan", "resume_run", "start_run", "trial_id"]
