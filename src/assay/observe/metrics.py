"""Prometheus metrics of a run: live (a run plugin serving ``/metrics``) and from a finished run
(a textfile). Both feed the same :class:`RunSeries` from the scorer's trial facts."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from assay.errors import IntegrityError, UsageError
from assay.observe.facts import open_run, run_trials, trial_facts
from assay.observe.series import RunSeries
from assay.observe._plugin import hookimpl

log = logging.getLogger(__name__)


def series_from_run(path: Path | str, *, verify: bool = True) -> RunSeries:
    """The series of a finished (or stopped) run, read from its run directory alone."""
    rd, manifest = open_run(path, verify=verify)
    return RunSeries(manifest).add_all(run_trials(rd, manifest))


def write_run_textfile(path: Path | str, textfile: Path | str, *, verify: bool = True) -> Path:
    """`assay metrics RUN --textfile FILE`: node-exporter textfile format, written atomically."""
    from assay.observe.prom import write_textfile

    return write_textfile(series_from_run(path, verify=verify), textfile)


class MetricsPlugin:
    """Serves ``/metrics`` while a run is live. Each trial is counted when its final attempt's
    result is on disk, folded from the run directory exactly as the scorer folds it.

    ``final_scrape_s``: at the end of the run, wait up to this long for one scrape that sees the
    last trial (a scraper polling every few seconds would otherwise miss it).
    Trials finished before a resume were counted by the process that ran them (Prometheus sums
    across the counter reset), so a resumed run counts only its own trials.
    """

    def __init__(self, port: int = 0, host: str = "127.0.0.1", *, final_scrape_s: float = 0.0):
        self.port, self.host, self.final_scrape_s = port, host, final_scrape_s
        self.series: RunSeries | None = None
        self.server: Any = None
        self.errors = 0  # trials that could not be read back (logged; `assay metrics` recounts from disk)
        self._rd: Any = None

    def start(self) -> str:
        """Bind the server now (before the run): a port in use is a usage error, not a failed run."""
        from assay.observe.prom import MetricsServer

        if self.server is None:
            try:
                self.server = MetricsServer(None, self.port, self.host)
            except OSError as e:
                raise UsageError(f"--metrics-port {self.port}: cannot serve on {self.host}:{self.port} ({e.strerror or e}); "
                                 "choose a free port") from None
        return str(self.server.url)

    @hookimpl
    def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
        self.start()
        self._rd = run_dir
        self.series = RunSeries(manifest)
        self.server.collector.series = self.series
        log.info("metrics served at %s", self.server.url)

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        if not final or self.series is None:
            return
        try:
            facts = trial_facts(self._rd, result.trial_id)
        except (OSError, ValueError, IntegrityError) as e:  # watching must never stop the evaluation it watches
            self.errors += 1
            log.error("metrics: trial %s not counted: %s", result.trial_id, e)
            return
        if facts is not None:
            self.series.add(facts)
            self.server.collector.updated()

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        self.close()

    def close(self) -> None:
        if self.server is None:
            return
        if self.final_scrape_s > 0 and not self.server.collector.wait_served(self.final_scrape_s):
            log.warning("no scrape of %s saw the last trial within %.0f s", self.server.url, self.final_scrape_s)
        self.server.close()
        self.server = None
