"""The run directory's writer is the first consumer of the run's event stream: whatever a plugin
hears has already happened on disk, and the writer's own failures are not swallowed like a
plugin's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import RunDirError
from assay.run import RunOptions, start_run
from assay.run.hooks import hookimpl
from assay.store.rundir import RunDir
from assay.trace import read_events


class DiskWitness:
    """A plugin that looks at the run directory at the moment it is told of each step."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.marker_on_disk: list[bool] = []
        self.retry_reasons: list[str | None] = []
        self.result_on_disk: list[bool] = []
        self.events_told: dict[str, list[int]] = {}
        self.events_on_disk: dict[str, list[int]] = {}

    @hookimpl
    def assay_attempt_started(self, trial_id: str, attempt: int, retry_reason: str | None) -> None:
        self.marker_on_disk.append(RunDir(self.run_dir).started_info(trial_id, attempt) is not None)
        self.retry_reasons.append(retry_reason)

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool, events: Any) -> None:
        rd = RunDir(self.run_dir)
        self.result_on_disk.append(rd.result(result.trial_id, result.attempt) == result)
        self.events_told[result.trial_id] = [e.seq for e in events]
        self.events_on_disk[result.trial_id] = [e.seq for e in read_events(rd.trace_path(result.trial_id))]


def test_a_plugin_hears_of_each_step_after_it_is_on_disk(calc_suite: Path, tmp_path: Path) -> None:
    witness = DiskWitness(tmp_path / "run")
    out = start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], out=tmp_path / "run", sandbox="host",
                               plugins=[witness]))
    assert len(out.results) == 2
    assert witness.marker_on_disk == [True, True] and witness.retry_reasons == [None, None]
    assert witness.result_on_disk == [True, True]
    for r in out.results:
        # the events the plugin was handed are exactly the ones written, all of them, in order
        told = witness.events_told[r.trial_id]
        assert told and told == witness.events_on_disk[r.trial_id] == list(range(len(told)))


class Meddler:
    """A plugin that writes the result file itself before the writer can: evidence must never be
    overwritten, and the writer's refusal is the harness's error, not a plugin failure."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir

    @hookimpl
    def assay_attempt_started(self, trial_id: str, attempt: int) -> None:
        target = RunDir(self.run_dir).attempt_dir(trial_id, attempt) / "result.json"
        target.write_text("{}")


def test_the_writers_failure_is_not_swallowed_as_a_plugins(calc_suite: Path, tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="already exists"):
        start_run(RunOptions(suite=calc_suite, agents=["oracle"], out=tmp_path / "run", sandbox="host",
                             plugins=[Meddler(tmp_path / "run")]))
