"""Cost of one ``/metrics`` scrape of a live run: before (prometheus_client's server, which
re-renders the series, re-scoring them, at every scrape) and after (assay's page, rendered once
per update). A synthetic run directory of ``--trials`` trials over 3 agents; loopback only.

    .venv/bin/python bench/metrics_scrape.py [--trials 66] [--scrapes 50]

Prints the page size, the median and p95 seconds per scrape for each, and the CPU seconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from prometheus_client import start_http_server

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assay.observe.metrics import series_from_run  # noqa: E402
from assay.observe.prom import MetricsServer, registry_for  # noqa: E402
from tests.score.synth import attempt, write_run  # noqa: E402


def _run(tmp: Path, trials: int) -> Path:
    rs = []
    for i in range(trials):
        agent = ("a1", "a2", "a3")[i % 3]
        cat = ("code", "ops", "data")[(i // 3) % 3]
        rs.append(attempt(f"task-{i // 3:03d}", cat, agent, 1, ("pass", "fail", "timeout")[i % 7 % 3],
                          cost=0.001 * i, tokens=100 + i, wall=1 + i % 40,
                          incidents=[{"type": "secret_leak", "severity": "high"}] if i % 11 == 0 else None))
    return write_run(tmp / "run", {"code": 1, "ops": 1, "data": 1}, rs).path


def _time(url: str, n: int) -> tuple[list[float], float, int]:
    took, size = [], 0
    cpu0 = time.process_time()
    with httpx.Client(timeout=30) as c:
        for _ in range(n):
            t0 = time.perf_counter()
            size = len(c.get(url).content)
            took.append(time.perf_counter() - t0)
    return took, time.process_time() - cpu0, size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=66)
    ap.add_argument("--scrapes", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        series = series_from_run(_run(Path(d), args.trials))
        reg, _col = registry_for(series)
        httpd, thread = start_http_server(0, addr="127.0.0.1", registry=reg)
        before = _time(f"http://127.0.0.1:{httpd.server_port}/metrics", args.scrapes)
        httpd.shutdown()
        server = MetricsServer(series, 0)
        server.page.updated()
        after = _time(server.url, args.scrapes)
        server.close()
    for name, (took, cpu, size) in (("before (render per scrape)", before), ("after (render per update)", after)):
        took.sort()
        print(f"{name:28s} page {size} B  median {statistics.median(took) * 1000:.2f} ms  "
              f"p95 {took[int(len(took) * 0.95) - 1] * 1000:.2f} ms  process CPU {cpu:.2f} s for {len(took)} scrapes")


if __name__ == "__main__":
    main()
