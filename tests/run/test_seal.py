"""An attempt's events stay in memory while it runs and are written once, when it is sealed:
before its result, so the ledger binds the result to the trace as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.run import RunOptions, start_run
from assay.run.hooks import hookimpl
from assay.store.rundir import RunDir
from assay.trace import read_events
from assay.trace.events import EventKind


class FileWatcher:
    """Looks at the trace file while events are dispatched, and when the result is announced."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.on_disk_during: list[int] = []
        self.on_disk_after: dict[str, int] = {}

    def _count(self, trial_id: str) -> int:
        return len(read_events(RunDir(self.run_dir).trace_path(trial_id)))

    @hookimpl
    def assay_trace_event(self, event: Any) -> None:
        self.on_disk_during.append(self._count(event.trial_id))

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        self.on_disk_after[result.trial_id] = self._count(result.trial_id)


def test_events_are_written_once_when_the_attempt_is_sealed(calc_suite: Path, tmp_path: Path) -> None:
    watcher = FileWatcher(tmp_path / "run")
    out = start_run(RunOptions(suite=calc_suite, agents=["oracle"], out=tmp_path / "run", sandbox="host",
                               plugins=[watcher]))
    [r] = out.results
    assert watcher.on_disk_during and set(watcher.on_disk_during) == {0}  # nothing on disk while it ran
    events = read_events(out.run_dir.trace_path(r.trial_id))
    assert watcher.on_disk_after[r.trial_id] == len(events) == len(watcher.on_disk_during)
    assert events[-1].kind is EventKind.attempt_ended and [e.seq for e in events] == list(range(len(events)))
