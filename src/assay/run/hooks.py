"""The lifecycle of a run, written down once (pluggy hook specifications).

The run-directory writer is the engine itself; everything else that watches a run (the
terminal progress, metrics, exporters, a third party's plugin) implements some of these
hooks and is registered on the run's plugin manager. All hooks are notifications: every
implementation is called, return values are ignored, and an exception in one is logged and
does not stop the run.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("assay")
hookimpl = pluggy.HookimplMarker("assay")


class RunHooks:
    @hookspec
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        """After the manifest is written (or read back on resume), before any trial starts.
        ``planned`` is the size of the matrix, ``pending`` how many trials still need an attempt."""

    @hookspec
    def assay_attempt_started(self, trial_id: str, attempt: int) -> None:
        """When an attempt's started marker is on disk."""

    @hookspec
    def assay_trace_event(self, event: Any) -> None:
        """For every trace event, after it was written (redacted)."""

    @hookspec
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        """After an attempt's result file is written. ``final``: no retry follows."""

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
