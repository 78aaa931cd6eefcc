"""Live terminal progress: a run plugin (pluggy hooks), like any third-party consumer."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from assay.run.hooks import hookimpl


class ProgressPlugin:
    """Trials done/total, pass/fail/error so far, ETA."""

    def __init__(self, console: Console | None = None, *, enabled: bool = True):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.counts: Counter[str] = Counter()
        self.progress: Progress | None = None
        self.task_id: Any = None

    def _label(self) -> str:
        c = self.counts
        return (f"[green]pass {c['pass']}[/] [red]fail {c['fail']}[/] [yellow]timeout {c['timeout']}[/] "
                f"[magenta]error {c['infra_error']}[/] [dim]skipped {c['skipped']}[/]")

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        if not self.enabled:
            return
        self.progress = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=self.console,
                                 transient=False)
        self.progress.start()
        self.task_id = self.progress.add_task(self._label(), total=planned, completed=planned - pending)

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        if not final:
            return
        self.counts[result.end_state.value] += 1
        if self.progress is not None:
            self.progress.update(self.task_id, advance=1, description=self._label())

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
