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

    The end of a run is where a live exporter loses data: the process exits, and the last update
    was never scraped. So at the end (1) the final state is written to ``textfile`` when one is
    given (node-exporter's textfile collector: where Prometheus conventionally reads batch jobs),
    (2) the server keeps serving up to ``final_scrape_s`` until one scrape has received the last
    update in full, and (3) when none did, a warning says so and names the way to recover it.
    Trials finished before a resume were counted by the process that ran them (Prometheus sums
    across the counter reset), so a resumed run counts only its own trials.
    """

    def __init__(self, port: int | None = 0, host: str = "127.0.0.1", *, final_scrape_s: float = 0.0,
                 textfile: Path | str | None = None):
        self.port, self.host, self.final_scrape_s = port, host, final_scrape_s
        self.textfile = Path(textfile) if textfile is not None else None
        self.series: RunSeries | None = None
        self.server: Any = None
        self.errors = 0  # trials that could not be read back (logged; `assay metrics` recounts from disk)
        self.last_scraped: bool | None = None  # after close: did a scrape receive the final state?
        self._rd: Any = None

    def start(self) -> str:
        """Bind the server now (before the run): a port in use is a usage error, not a failed run.
        Without a port (``None``) nothing is served: the textfile alone is written at the end."""
        from assay.observe.prom import MetricsServer

        if self.port is None:
            return ""
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
        if self.server is not None:
            self.server.collector.series = self.series
            self.server.page.updated()  # the zeroed series are an update of their own
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
            if self.server is not None:
                self.server.page.updated()

    @hookimpl
    def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
        self.close()

    def _write_textfile(self) -> Path | None:
        from assay.observe.prom import write_textfile

        if self.textfile is None or self.series is None:
            return None
        try:
            return write_textfile(self.series, self.textfile)
        except OSError as e:  # the run's evidence is on disk; `assay metrics RUN --textfile` rewrites it
            log.error("metrics: final state not written to %s: %s", self.textfile, e)
            return None

    def close(self) -> None:
        written = self._write_textfile()
        self.textfile = None  # written once (close may be called again)
        if self.server is None:
            return
        page = self.server.page
        self.last_scraped = page.last_served or (self.final_scrape_s > 0 and page.wait_served(self.final_scrape_s))
        if not self.last_scraped and self.series is not None:
            where = (f"the final state is in {written}" if written is not None else
                     f"`assay metrics {self._rd.path if self._rd is not None else 'RUN_DIR'} --textfile FILE` "
                     "writes it for node-exporter's textfile collector")
            log.warning("the last state of the run was not scraped from %s (no scrape received it within %.0f s): "
                        "Prometheus misses the last trial(s); %s", self.server.url, self.final_scrape_s, where)
        self.server.close()
        self.server = None
