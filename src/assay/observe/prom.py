"""Prometheus exposition of :class:`RunSeries`: one collector for the live ``/metrics`` endpoint
and the textfile of a finished run, so both are the same text for the same trials."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

from prometheus_client import CollectorRegistry, generate_latest, start_http_server, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from assay.observe.series import DURATION_BUCKETS, PREFIX, RunSeries

_FAMILY = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily}


class SeriesCollector(Collector):
    """Renders a :class:`RunSeries` at each scrape and remembers which update was last served."""

    def __init__(self, series: RunSeries | None):
        self.series = series  # None until the run started: a scrape then sees no series
        self._cond = threading.Condition()
        self._updates = 0
        self._served = -1

    def updated(self) -> None:
        """Call after :meth:`RunSeries.add`: the next scrape serves this update."""
        with self._cond:
            self._updates += 1

    def collect(self) -> Iterator[Metric]:
        with self._cond:
            seen = self._updates
        for fam in self.series.families() if self.series is not None else []:
            s = fam.spec
            name = PREFIX + s.name
            if s.type == "histogram":
                h = HistogramMetricFamily(name, s.help, labels=list(s.labels))
                for labels, cum, total in fam.buckets:
                    les = [str(float(b)) for b in DURATION_BUCKETS] + ["+Inf"]
                    h.add_metric(list(labels), buckets=list(zip(les, cum)), sum_value=total)
                yield h
                continue
            m = _FAMILY[s.type](name, s.help, labels=list(s.labels))
            for labels, value in fam.samples:
                m.add_metric(list(labels), value)
            yield m
        with self._cond:
            self._served = max(self._served, seen)
            self._cond.notify_all()

    def wait_served(self, timeout: float) -> bool:
        """Block until a scrape has served the latest update (True) or ``timeout`` passed (False)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._served >= self._updates, timeout=timeout)


def registry_for(series: RunSeries | None) -> tuple[CollectorRegistry, SeriesCollector]:
    reg = CollectorRegistry(auto_describe=False)
    col = SeriesCollector(series)
    reg.register(col)
    return reg, col


def exposition(series: RunSeries) -> str:
    """The Prometheus text format of the series (what ``/metrics`` serves)."""
    reg, col = registry_for(series)
    return generate_latest(reg).decode()


def write_textfile(series: RunSeries, path: Path | str) -> Path:
    """Write the series for node-exporter's textfile collector (atomic rename, so a reader never
    sees half a file)."""
    reg, _col = registry_for(series)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_to_textfile(str(target), reg)
    return target


class MetricsServer:
    """``/metrics`` on ``host:port`` (port 0 picks a free one) for the lifetime of a run. Bound
    before the run starts, so a port in use is refused before anything is written."""

    def __init__(self, series: RunSeries | None, port: int, host: str = "127.0.0.1"):
        self.registry, self.collector = registry_for(series)
        self._httpd: Any
        self._httpd, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.host = host
        self.port: int = self._httpd.server_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
