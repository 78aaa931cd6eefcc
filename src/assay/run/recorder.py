"""The run directory's writer: the first consumer of the run's event stream.

The executor announces each step of a trial once (:class:`~assay.run.hooks.Dispatcher`); the
recorder hears every announcement before any plugin does, so what a plugin is told has already
happened on disk: an attempt's started marker exists when ``assay_attempt_started`` reaches the
progress display, and its events and result are sealed when ``assay_attempt_finished`` does.
Unlike a plugin, the recorder's failures are the harness's own (a full disk, evidence that
already exists): they propagate and end the attempt as an infrastructure error.

The recorder is also the only code that writes an attempt's trace and result, whether the
attempt ran here, on a remote worker (which sends back the result and its events), or was
closed as interrupted on resume.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.records.results import AttemptResult
from assay.store.rundir import RunDir
from assay.trace.events import TraceEvent
from assay.trace.writer import append_events


class RunDirRecorder:
    """Writes what the event stream announces into one run directory."""

    def __init__(self, run_dir: RunDir):
        self.run_dir = run_dir

    def assay_attempt_started(self, trial_id: str, attempt: int, retry_reason: str | None) -> None:
        """The started marker: from now on a resume knows this attempt was in flight."""
        self.run_dir.mark_started(trial_id, attempt, {"retry_reason": retry_reason})

    def assay_attempt_finished(self, result: AttemptResult, events: Sequence[TraceEvent]) -> None:
        """The attempt's events, in one append, then its immutable result (which seals them)."""
        self.write_events(result.trial_id, events)
        self.run_dir.write_result(result)

    def write_events(self, trial_id: str, events: Sequence[TraceEvent]) -> None:
        """Events recorded since the last write (e.g. a plugin's failure after the final result)."""
        append_events(self.run_dir.trace_path(trial_id), events)


__all__ = ["RunDirRecorder"]
