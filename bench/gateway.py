"""Gateway overhead: latency p50/p99 and requests/s of the scripted gateway over HTTP, versus a
direct in-process call of the same backend, and versus LiteLLM's proxy forwarding to it.

    .venv/bin/python bench/gateway.py [--n 300] [--litellm PATH_TO_litellm_BINARY]

Loopback only; every loop is bounded in count and in time. LiteLLM is looked for at --litellm,
$ASSAY_LITELLM, or `litellm` on PATH; without it that row says why it is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from assay.gateway.backends.scripted import ScriptedSession
from assay.gateway.script import ModelScript
from assay.gateway.standalone import start_standalone
from assay.gateway.wire.openai_chat import OpenAIChatWire
from assay.spec.manifest import GatewayRecord

SCRIPT = {"turns": [{"text": "Working.", "tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]}]}
BODY = {"model": "assay-scripted", "messages": [{"role": "user", "content": "List the files."}],
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}}}}}]}
TIME_CAP_S = 60.0
MASTER_KEY = "sk-assay-bench-" + os.urandom(12).hex()  # the local proxy refuses to start without one


def stats(name: str, lat: list[float], wall: float) -> dict:
    q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [lat[0]] * 99
    return {"name": name, "n": len(lat), "p50_ms": statistics.median(lat) * 1e3, "p99_ms": q[98] * 1e3,
            "rps": len(lat) / wall}


def bench_direct(n: int) -> dict:
    sess, wire = ScriptedSession(ModelScript.model_validate(SCRIPT)), OpenAIChatWire()

    async def loop() -> tuple[list[float], float]:
        lat, t_start = [], time.perf_counter()
        for _ in range(n):
            t0 = time.perf_counter()
            req = wire.parse(json.loads(json.dumps(BODY)))
            reply = await sess.complete(req, 1)
            json.dumps(wire.render(reply, req, "x"))
            lat.append(time.perf_counter() - t0)
            if time.perf_counter() - t_start > TIME_CAP_S:
                break
        return lat, time.perf_counter() - t_start

    lat, wall = asyncio.run(loop())
    return stats("direct in-process (parse+backend+render)", lat, wall)


def bench_http(name: str, url: str, key: str, n: int) -> dict:
    lat: list[float] = []
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30, trust_env=False) as c:
        for _ in range(min(20, n)):  # warm-up
            c.post(url, json=BODY).raise_for_status()
        t_start = time.perf_counter()
        for _ in range(n):
            t0 = time.perf_counter()
            r = c.post(url, json=BODY)
            r.raise_for_status()
            lat.append(time.perf_counter() - t0)
            if time.perf_counter() - t_start > TIME_CAP_S:
                break
        wall = time.perf_counter() - t_start
    return stats(name, lat, wall)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_litellm(arg: str | None) -> str | None:
    for cand in (arg, os.environ.get("ASSAY_LITELLM"), shutil.which("litellm"), "/tmp/litellm-venv/bin/litellm"):
        if cand and Path(cand).is_file():
            return cand
    return None


def bench_litellm(binary: str | None, gw_url: str, gw_key: str, n: int) -> dict | str:
    if binary is None:
        return "LiteLLM not measured: no `litellm` binary (pip install 'litellm[proxy]', or pass --litellm PATH)"
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-litellm-"))
    cfg = {"model_list": [{"model_name": "assay-scripted", "litellm_params": {
        "model": "openai/assay-scripted", "api_base": gw_url + "/v1", "api_key": gw_key}}],
        "litellm_settings": {"telemetry": False, "drop_params": True}}
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
           "LITELLM_LOG": "ERROR", "NO_PROXY": "127.0.0.1,localhost", "HOME": str(tmp),
           "LITELLM_MASTER_KEY": MASTER_KEY}
    log = open(tmp / "litellm.log", "wb")
    proc = subprocess.Popen([binary, "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1", "--port", str(port),
                             "--num_workers", "1"], stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return f"LiteLLM not measured: the proxy exited {proc.returncode} (log: {tmp / 'litellm.log'})"
            try:
                if httpx.get(url + "/health/liveliness", timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)  # polling a child process's readiness, bounded by the deadline
        else:
            return f"LiteLLM not measured: the proxy did not become ready in 120 s (log: {tmp / 'litellm.log'})"
        return bench_http("LiteLLM proxy -> gateway (scripted)", url + "/v1/chat/completions", MASTER_KEY, n)
    except httpx.HTTPStatusError as e:
        return f"LiteLLM not measured: proxy answered {e.response.status_code}: {e.response.text[:300]}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="requests per row (bounded also by a 60 s cap)")
    ap.add_argument("--litellm", help="path to the litellm proxy binary")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    (tmp / "model.yaml").write_text(yaml.safe_dump(SCRIPT))
    gw = start_standalone(GatewayRecord(backend="scripted", model="assay-scripted",
                                        settings={"script": str(tmp / "model.yaml")}))
    try:
        rows = [bench_direct(args.n),
                bench_http("gateway over HTTP (scripted)", gw.url + "/v1/chat/completions", gw.session.key, args.n)]
        lite = bench_litellm(find_litellm(args.litellm), gw.url, gw.session.key, args.n)
    finally:
        gw.stop()
    print(f"{'path':45} {'n':>5} {'p50 ms':>8} {'p99 ms':>8} {'req/s':>8}")
    for r in rows + ([lite] if isinstance(lite, dict) else []):
        print(f"{r['name']:45} {r['n']:5d} {r['p50_ms']:8.3f} {r['p99_ms']:8.3f} {r['rps']:8.1f}")
    direct, http = rows[0], rows[1]
    print(f"gateway added latency: p50 {http['p50_ms'] - direct['p50_ms']:.3f} ms, p99 {http['p99_ms'] - direct['p99_ms']:.3f} ms")
    if isinstance(lite, dict):
        print(f"LiteLLM added on top of the gateway: p50 {lite['p50_ms'] - http['p50_ms']:.3f} ms, "
              f"p99 {lite['p99_ms'] - http['p99_ms']:.3f} ms")
    else:
        print(lite)
    return 0


if __name__ == "__main__":
    sys.exit(main())
