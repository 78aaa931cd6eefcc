"""Hooks isolate their plugins: a plugin raising in any hook is recorded as an error trace event
naming it, the next plugin still gets the event, and the results are those of a run without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.records.results import AttemptResult
from assay.run import RunOptions, start_run
from assay.run.hooks import RUN_TRACE, hookimpl
from assay.trace import read_events
from assay.trace.events import EventKind

HOOKS = ["assay_run_started", "assay_attempt_started", "assay_trace_event", "assay_attempt_finished",
         "assay_run_finished"]


class Recorder:
    """Counts every hook call it gets (a well-behaved plugin next to a broken one)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {h: 0 for h in HOOKS}
        self.finished: list[str] = []

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        self.calls["assay_run_started"] += 1

    @hookimpl
    def assay_attempt_started(self, trial_id: str, attempt: int) -> None:
        self.calls["assay_attempt_started"] += 1

    @hookimpl
    def assay_trace_event(self, event: Any) -> None:
        self.calls["assay_trace_event"] += 1

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        self.calls["assay_attempt_finished"] += 1
        self.finished.append(result.end_state.value)

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        self.calls["assay_run_finished"] += 1


class Broken:
    """Raises in the hooks it is told to (and records that it was called)."""

    def __init__(self, hooks: list[str]) -> None:
        self.hooks = set(hooks)
        self.raised = 0

    def _maybe(self, hook: str) -> None:
        if hook in self.hooks:
            self.raised += 1
            raise RuntimeError(f"broken plugin in {hook}")

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        self._maybe("assay_run_started")

    @hookimpl
    def assay_attempt_started(self, trial_id: str, attempt: int) -> None:
        self._maybe("assay_attempt_started")

    @hookimpl
    def assay_trace_event(self, event: Any) -> None:
        self._maybe("assay_trace_event")

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        self._maybe("assay_attempt_finished")

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        self._maybe("assay_run_finished")


def essence(results: list[AttemptResult]) -> list[tuple]:
    """What a plugin must never change: every verdict and what it rests on."""
    return sorted((r.trial_id, r.attempt, r.end_state, r.reason, r.retryable, r.predicates_held, r.diagnostic_score,
                   [(p.id, p.passed) for p in r.predicates], r.incidents, r.limits_exceeded, r.budget_exceeded,
                   r.usage.tool_calls, r.agent_exit_code) for r in results)


def run(suite: Path, out: Path, plugins: list[object]) -> Any:
    return start_run(RunOptions(suite=suite, agents=["oracle", "nop"], out=out, sandbox="host", plugins=plugins))


@pytest.fixture
def baseline(calc_suite: Path, tmp_path: Path) -> list[tuple]:
    rec = Recorder()
    out = run(calc_suite, tmp_path / "clean", [rec])
    assert out.hook_failures == [] and not (out.run_dir.path / RUN_TRACE).exists()
    return essence(out.results)


@pytest.mark.parametrize("hook", HOOKS)
def test_a_plugin_raising_in_any_hook_changes_nothing(calc_suite: Path, tmp_path: Path, baseline: list[tuple],
                                                      hook: str) -> None:
    broken, rec = Broken([hook]), Recorder()
    out = run(calc_suite, tmp_path / "broken", [broken, rec])
    assert essence(out.results) == baseline
    assert broken.raised > 0 and len(out.hook_failures) == broken.raised
    assert {f.plugin for f in out.hook_failures} == {out_plugin_name(out, broken)}
    assert sorted(rec.finished) == ["fail", "pass"]  # the other plugin still heard every event
    assert all(n > 0 for n in rec.calls.values())
    errors = [e.data for r in out.results for e in read_events(out.run_dir.trace_path(r.trial_id))
              if e.kind is EventKind.error and e.data.get("reason") == "hook"]
    if hook in ("assay_run_started", "assay_run_finished"):  # no trial to record it in: the run's own trace
        run_errors = [json.loads(line)["data"] for line in (out.run_dir.path / RUN_TRACE).read_text().splitlines()]
        assert [e["hook"] for e in run_errors] == [hook] and errors == []
        errors = run_errors
    assert errors and all(e["hook"] == hook and "broken plugin" in e["message"] for e in errors)
    assert all(e["plugin"] == out_plugin_name(out, broken) for e in errors)


def out_plugin_name(out: Any, plugin: object) -> str:
    """The name failures are recorded under: the plugin's class, by its dotted name."""
    return f"{type(plugin).__module__}.{type(plugin).__qualname__}"


def test_a_plugin_failing_on_every_event_is_recorded_once_per_event_no_recursion(calc_suite: Path,
                                                                                 tmp_path: Path) -> None:
    broken = Broken(["assay_trace_event"])
    out = run(calc_suite, tmp_path / "r", [broken])
    for r in out.results:
        events = read_events(out.run_dir.trace_path(r.trial_id))
        hook_errors = [e for e in events if e.kind is EventKind.error and e.data.get("reason") == "hook"]
        others = [e for e in events if not (e.kind is EventKind.error and e.data.get("reason") == "hook")]
        # every ordinary event failed once and was recorded once; the error events' own failures were not
        assert len(hook_errors) == len(others)
        assert [e.seq for e in events] == list(range(len(events)))
    assert broken.raised == 2 * sum(1 for r in out.results for e in read_events(out.run_dir.trace_path(r.trial_id))
                                    if not (e.kind is EventKind.error and e.data.get("reason") == "hook"))
