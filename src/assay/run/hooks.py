"""The lifecycle of a run, written down once (pluggy hook specifications), and the one
dispatcher that hands its events to every consumer.

One stream, two kinds of consumer. The run directory's writer
(:class:`~assay.run.recorder.RunDirRecorder`) hears each event first and its failures are the
harness's; then every plugin hears it: the terminal progress, metrics, exporters, a third
party's. For plugins all hooks are notifications: every implementation is called, return
values are ignored, and an exception in one is caught and recorded as an ``error`` trace event
naming the plugin; it never changes a trial's end state and never stops the run.
"""

from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pluggy

from assay.run.recorder import RunDirRecorder
from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.writer import TraceWriter

hookspec = pluggy.HookspecMarker("assay")
hookimpl = pluggy.HookimplMarker("assay")

#: where failures of run-level hooks (no trial to record them in) are written, in the run directory
RUN_TRACE = "run.trace.jsonl"


class RunHooks:
    @hookspec
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        """After the manifest is written (or read back on resume), before any trial starts.
        ``planned`` is the size of the matrix, ``pending`` how many trials still need an attempt."""

    @hookspec
    def assay_attempt_started(self, trial_id: str, attempt: int, retry_reason: str | None) -> None:
        """When an attempt's started marker is on disk, before the attempt does anything.
        ``retry_reason``: why the trial is tried again (None for its first attempt)."""

    @hookspec
    def assay_trace_event(self, event: Any) -> None:
        """For every trace event, as it is recorded (redacted)."""

    @hookspec
    def assay_attempt_finished(self, result: Any, final: bool, events: Any) -> None:
        """After an attempt's events and result are written and sealed. ``final``: no retry
        follows. ``events``: the trace events written with it (the attempt's, in order)."""

    @hookspec
    def assay_run_budget(self, spend: Any) -> None:
        """When the run has a run-wide budget: once before any trial starts (its limits, the
        estimate, what was spent already) and once when it is reached (``spend.reached`` set;
        called from the gateway's thread). ``spend``: :class:`assay.run_budget.meter.RunSpend`."""

    @hookspec
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        """After every planned trial has a final attempt (or the run was stopped)."""


def make_plugin_manager(plugins: list[object] | None = None) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("assay")
    pm.add_hookspecs(RunHooks)
    pm.load_setuptools_entrypoints("assay.plugins")
    for p in plugins or []:
        pm.register(p)
    return pm


@dataclass(frozen=True)
class HookFailure:
    plugin: str
    hook: str
    message: str
    trial_id: str | None = None

    def record(self) -> dict[str, Any]:
        return {"reason": "hook", "plugin": self.plugin, "hook": self.hook, "message": self.message}


def plugin_name(impl: Any) -> str:
    """The name a plugin was registered under (an entry point's), else its class's dotted name."""
    if impl.plugin_name != str(id(impl.plugin)):
        return str(impl.plugin_name)
    cls = type(impl.plugin)
    return f"{cls.__module__}.{cls.__qualname__}"


def argnames(function: Any) -> tuple[str, ...]:
    """The hook arguments a consumer asks for (as pluggy does, each gets only those it declares)."""
    return tuple(inspect.signature(function).parameters)


class Dispatcher:
    """Hands every run event to the run directory's writer, then to every plugin, each on its
    own: one plugin's exception is recorded (in the trial's trace when there is one) and the
    next plugin still gets the event. The writer's exceptions propagate."""

    def __init__(self, pm: pluggy.PluginManager, writer: RunDirRecorder):
        self.pm = pm
        self.writer = writer
        self.failures: list[HookFailure] = []
        self._traces: dict[str, TraceWriter] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def attach(self, trace: TraceWriter) -> None:
        """Record failures of hooks about this trial in its trace."""
        with self._lock:
            self._traces[trace.trial_id] = trace

    def detach(self, trace: TraceWriter) -> None:
        """The trial is over: its failures are no longer recorded in its trace (nor the trace kept)."""
        with self._lock:
            if self._traces.get(trace.trial_id) is trace:
                del self._traces[trace.trial_id]

    def trace_event(self, event: TraceEvent) -> None:
        """The trace writers' listener."""
        self.notify("assay_trace_event", event.trial_id, event=event)

    def notify(self, hook: str, trial: str | None, /, **kwargs: Any) -> None:
        """Call ``hook`` on the writer, then on every plugin with ``kwargs``; a plugin's failure
        is recorded in ``trial``'s trace."""
        written = getattr(self.writer, hook, None)  # the writer hears only what it writes
        if written is not None:
            written(**{a: kwargs[a] for a in argnames(written)})
        caller = getattr(self.pm.hook, hook)
        for impl in reversed(caller.get_hookimpls()):  # pluggy's own order: last registered first
            try:
                impl.function(*[kwargs[a] for a in impl.argnames])
            except Exception as e:  # noqa: BLE001 - a plugin never stops the run
                self._failed(HookFailure(plugin_name(impl), hook, f"{type(e).__name__}: {e}"[:2000], trial))

    def _failed(self, failure: HookFailure) -> None:
        with self._lock:
            self.failures.append(failure)
            trace = self._traces.get(failure.trial_id) if failure.trial_id else None
        if trace is None or getattr(self._local, "recording", False):
            return  # a hook failing on the error event of a hook failure: counted, not recorded again
        self._local.recording = True
        try:
            trace.emit(Source.harness, EventKind.error, failure.record())
        finally:
            self._local.recording = False

    def write_run_failures(self, run_dir: Path) -> None:
        """Failures of hooks that belong to no trial, as error events in ``run.trace.jsonl``."""
        run_level = [f for f in self.failures if f.trial_id is None]
        if not run_level:
            return
        trace = TraceWriter(run_dir / RUN_TRACE, "run")
        for f in run_level:
            trace.emit(Source.harness, EventKind.error, f.record())
