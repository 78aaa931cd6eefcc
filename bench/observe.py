"""Run overhead of observation: the same run with nothing, with live metrics (a scraper polling
/metrics every 250 ms), and with live metrics plus OTLP export (to a loopback OTLP/HTTP sink),
interleaved; then the cost of the finished-run exports.

    .venv/bin/python bench/observe.py [--rounds 3] [--repeat 2] [--sandbox host]

Prints median wall time per configuration and the ratio to the plain run. Loopback only.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from assay.observe.metrics import MetricsPlugin, write_run_textfile
from assay.observe.otel import OtlpPlugin, export_run_otlp
from assay.run import RunOptions, start_run

ROOT = Path(__file__).resolve().parents[1]
TASKS = ["fix-pagination", "rename-by-manifest", "find-wrong-config-key", "csv-to-json-totals"]


class Sink:
    """An OTLP/HTTP endpoint that accepts and counts (what a collector does first)."""

    def __init__(self) -> None:
        self.requests = 0
        sink = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sink.requests += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Scraper:
    """Polls /metrics like Prometheus would, only faster (bounded by the run)."""

    def __init__(self, url: str):
        self.url, self.stop, self.scrapes = url, threading.Event(), 0
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(0.25):
            try:
                httpx.get(self.url, timeout=2)
                self.scrapes += 1
            except httpx.HTTPError:
                pass


HOOK_S: dict[str, float] = {}  # seconds spent inside the observe hooks, per configuration


def timed(cls: type, key: str) -> type:
    """The plugin with its hooks timed: the run's own cost of observing, robust to machine load."""

    class Timed(cls):  # type: ignore[misc, valid-type]
        def assay_run_started(self, run_dir: Any, manifest: Any, planned: int, pending: int) -> None:
            t = time.perf_counter()
            super().assay_run_started(run_dir=run_dir, manifest=manifest, planned=planned, pending=pending)
            HOOK_S[key] = HOOK_S.get(key, 0.0) + time.perf_counter() - t
            if isinstance(self, MetricsPlugin):
                self.scraper = Scraper(self.server.url)

        def assay_attempt_finished(self, result: Any, final: bool) -> None:
            t = time.perf_counter()
            super().assay_attempt_finished(result=result, final=final)
            HOOK_S[key] = HOOK_S.get(key, 0.0) + time.perf_counter() - t

        def assay_run_finished(self, run_dir: Any, results: list[Any]) -> None:
            if isinstance(self, MetricsPlugin):
                self.scraper.stop.set()
            t = time.perf_counter()
            super().assay_run_finished(run_dir=run_dir, results=results)
            HOOK_S[key] = HOOK_S.get(key, 0.0) + time.perf_counter() - t

    for name in ("assay_run_started", "assay_attempt_finished", "assay_run_finished"):
        setattr(getattr(Timed, name), "assay_impl", getattr(getattr(cls, name), "assay_impl", None))
    return Timed


def one(config: str, out: Path, repeat: int, sandbox: str, sink: Sink) -> float:
    plugins: list[object] = []
    if config in ("metrics", "metrics+otlp"):
        plugins.append(timed(MetricsPlugin, config)(0))
    if config == "metrics+otlp":
        plugins.append(timed(OtlpPlugin, config)(sink.url))
    t0 = time.perf_counter()
    start_run(RunOptions(suite=ROOT / "examples" / "starter", agents=["reference", "oracle"], repeat=repeat, out=out,
                         sandbox=sandbox, model="scripted", tasks=TASKS, plugins=plugins))
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--sandbox", default="host")
    args = ap.parse_args()
    sink = Sink()
    configs = ["off", "metrics", "metrics+otlp"]
    times: dict[str, list[float]] = {c: [] for c in configs}
    with tempfile.TemporaryDirectory(prefix="assay-bench-observe-") as tmp:
        last = None
        for r in range(args.rounds):
            for c in (configs if r % 2 == 0 else configs[::-1]):  # interleaved, alternating order
                last = Path(tmp) / f"{c}-{r}"
                times[c].append(one(c, last, args.repeat, args.sandbox, sink))
        assert last is not None
        from assay.store.rundir import RunDir

        trials = len(RunDir(last).manifest().plan.trials)
        print(f"run: starter subset, {trials} trials, agents reference(scripted)+oracle, sandbox {args.sandbox}, "
              f"{args.rounds} interleaved rounds")
        base = statistics.median(times["off"])
        for c in configs:
            med = statistics.median(times[c])
            hooks = HOOK_S.get(c, 0.0) / args.rounds
            print(f"  {c:<13} median {med:7.2f} s  (runs {', '.join(f'{x:.2f}' for x in times[c])})  ratio {med / base:.3f}"
                  f"  time in observe hooks {1000 * hooks:.0f} ms/run = {1000 * hooks / trials:.1f} ms/trial")
        print(f"  OTLP requests received by the sink: {sink.requests}")
        t0 = time.perf_counter()
        write_run_textfile(last, Path(tmp) / "m.prom")
        t1 = time.perf_counter()
        counts = export_run_otlp(last, sink.url)
        t2 = time.perf_counter()
        print(f"finished run: textfile {1000 * (t1 - t0):.0f} ms; OTLP export {1000 * (t2 - t1):.0f} ms "
              f"({counts['trials']} trials, {counts['spans']} spans, failed batches {counts['failed']})")


if __name__ == "__main__":
    main()
