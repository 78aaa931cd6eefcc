"""`assay run --metrics-port PORT --otlp URL`: the flags wire the same plugins the library tests use."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import httpx
import pytest

from assay.cli.main import main
from tests.observe.recorder import Recorder


class Poller:
    """Scrapes /metrics until stopped, keeping every body (a stand-in for Prometheus' scrape loop)."""

    def __init__(self, url: str):
        self.url, self.bodies, self.stop = url, [], threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.stop.wait(0.05):
            try:
                self.bodies.append(httpx.get(self.url, timeout=2).text)
            except httpx.HTTPError:
                pass


def test_run_serves_metrics_and_sends_traces(calc_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(var, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    poller = Poller(f"http://127.0.0.1:{port}/metrics")
    try:
        with Recorder({("POST", "/v1/traces"): lambda r: (200, b"")}) as rec:
            rc = main(["run", str(calc_suite), "-a", "oracle,nop", "--sandbox", "host", "-q", "-o", str(tmp_path / "r"),
                       "--metrics-port", str(port), "--otlp", rec.url])
            posts = rec.of("POST", "/v1/traces")
    finally:
        poller.stop.set()
        poller.thread.join()
    assert rc == 0
    last = [b for b in poller.bodies if "agent_eval_trials_total" in b][-1]
    assert 'agent_eval_trials_total{agent="oracle",category="code",result="pass",suite="t"} 1.0' in last
    assert 'agent_eval_trials_total{agent="nop",category="code",result="fail",suite="t"} 1.0' in last
    roots = [sp for p in posts for _res, sp in p.spans() if not sp.parent_span_id]
    assert sorted(sp.name for sp in roots) == ["assay.trial", "assay.trial"]


def test_metrics_port_in_use_is_refused_before_anything_is_written(calc_suite: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        rc = main(["run", str(calc_suite), "-a", "oracle", "--sandbox", "host", "-q", "-o", str(tmp_path / "r"),
                   "--metrics-port", str(port)])
    assert rc == 2 and not (tmp_path / "r").exists()
    assert f"--metrics-port {port}" in capsys.readouterr().err
    assert main(["run", str(calc_suite), "-a", "oracle", "--metrics-port", "70000", "-o", str(tmp_path / "r2")]) == 2
