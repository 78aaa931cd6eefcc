"""Prometheus exposition of :class:`RunSeries`: one collector for the live ``/metrics`` endpoint
and the textfile of a finished run, so both are the same text for the same trials."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from assay.observe.series import DURATION_BUCKETS, PREFIX, RunSeries

_FAMILY = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily}


class SeriesCollector(Collector):
    """Renders a :class:`RunSeries` for the registry (the textfile and ``exposition``)."""

    def __init__(self, series: RunSeries | None):
        self.series = series  # None until the run started: a scrape then sees no series

    def collect(self) -> Iterator[Metric]:
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


class Page:
    """The ``/metrics`` page, rendered once per update however often it is scraped (a scrape
    under load costs a copy of bytes, not a re-scoring), and the bookkeeping of which update a
    scraper has received in full: an update counts as served only once a response carrying it
    was written to the socket, so a scrape abandoned half-way is not mistaken for delivery."""

    def __init__(self, registry: CollectorRegistry):
        self.registry = registry
        self.renders = 0  # how many times the series were rendered (bench/observe.py and tests read it)
        self._cond = threading.Condition()
        self._updates = 0
        self._served = -1
        self._in_flight = 0
        self._cache: tuple[int, bytes] | None = None
        self._render_lock = threading.Lock()

    def updated(self) -> None:
        """Call after :meth:`RunSeries.add`: the next scrape renders and serves this update."""
        with self._cond:
            self._updates += 1

    def body(self) -> tuple[int, bytes]:
        """(update number, page) for a scrape starting now; renders only when an update came in."""
        with self._render_lock:
            with self._cond:
                seen = self._updates
                self._in_flight += 1
            if self._cache is None or self._cache[0] != seen:
                self._cache = (seen, generate_latest(self.registry))
                self.renders += 1
            return self._cache

    def sent(self, update: int, ok: bool) -> None:
        """A response carrying ``update`` was written in full (``ok``) or broke off."""
        with self._cond:
            self._in_flight -= 1
            if ok:
                self._served = max(self._served, update)
            self._cond.notify_all()

    @property
    def last_served(self) -> bool:
        with self._cond:
            return self._served >= self._updates

    def wait_served(self, timeout: float) -> bool:
        """Block until a scrape has received the latest update in full (True) or ``timeout`` passed."""
        with self._cond:
            return self._cond.wait_for(lambda: self._served >= self._updates, timeout=timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no response is being written (so closing cannot cut one off)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._in_flight == 0, timeout=timeout)


def _handler(page: Page) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # HTTP/1.0: one connection per scrape, so closing the server ends every connection with it
        # (a kept-alive connection would go on serving a finished run's series)
        protocol_version = "HTTP/1.0"

        def log_message(self, *args: Any) -> None:  # a scrape every second is not news
            pass

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            if self.path.split("?", 1)[0] not in ("/metrics", "/"):
                self.send_error(404)
                return
            update, data = page.body()
            ok = False
            try:
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE_LATEST)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                ok = True
            except OSError:  # the scraper gave up (timeout) or went away: this update was not delivered
                self.close_connection = True
            finally:
                page.sent(update, ok)

    return Handler


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
        self.page = Page(self.registry)
        self._httpd = ThreadingHTTPServer((host, port), _handler(self.page))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="assay-metrics", daemon=True)
        self._thread.start()
        self.host = host
        self.port: int = self._httpd.server_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def close(self, drain_s: float = 5.0) -> None:
        """Stop accepting scrapes, then let a response being written finish (bounded)."""
        self._httpd.shutdown()
        self.page.wait_idle(drain_s)
        self._httpd.server_close()
        self._thread.join(timeout=5)
