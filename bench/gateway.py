"""Gateway overhead next to LiteLLM: the same load generator, the same fake upstream, fresh
processes, at concurrency 1, 16 and 64, streamed and not.

    .venv/bin/python bench/gateway.py [--n 1000] [--concurrency 1 16 64] [--stacks uvicorn-h11 hypercorn ...]

Every server runs in its own process: the fake upstream (an OpenAI-compatible server answering
at once, streams in 8 chunks ``--chunk-delay-ms`` apart with a final usage chunk), the assay
gateway (upstream backend, ``assay gateway serve``) and the LiteLLM proxy, which the script
installs in a throwaway venv (``--litellm-venv``, default /tmp/assay-bench-litellm) unless it
is there already. The load generator is a minimal HTTP/1.1 keep-alive client on asyncio with
C connections; per request it measures the time to the first body chunk (TTFB) and to the last
byte. "Added" = through the proxy minus straight to the upstream at the same concurrency. RSS is
the server's process tree after the load; start is spawn to a 200 on /health. CPU/req is the
milliseconds of CPU the server's process tree spent per request (warm-up included; the upstream
row: the upstream's own): on a shared machine it moves far less than req/s, which waits for a core. Loopback only;
every wait is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from assay.gateway.upstream_limits import DEFAULT_MAX_CONCURRENCY

KEY = "sk-assay-bench-0123456789abcdef"
MODEL = "bench-model"
TIME_CAP_S = 25.0
CHUNKS = 8
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "List the files in the workspace, please."}]}


# ------------------------------------------------------------------------------ fake upstream
def serve_upstream(port: int, chunk_delay_s: float) -> None:
    """An OpenAI-compatible upstream that answers at once (streams: CHUNKS chunks, then usage)."""
    import uvicorn

    from assay.gateway.server import lifespan, read_body

    answer = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": MODEL,
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": "Here are the files: a, b, c."}}],
                         "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}}).encode()

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
        d: dict[str, Any] = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": MODEL,
                             "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}]}
        if usage:
            d["usage"] = usage
        return b"data: " + json.dumps(d).encode() + b"\n\n"

    frames = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": f"part {i} "}) for i in range(CHUNKS - 2)]
    frames += [chunk({}, "stop"), chunk({}, usage={"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21})
               + b"data: [DONE]\n\n"]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        body = await read_body(receive)
        if scope["method"] == "GET":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"ok": true, "data": []}'})
            return
        if not json.loads(body or b"{}").get("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": answer})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for i, f in enumerate(frames):
            if i and chunk_delay_s:
                await asyncio.sleep(chunk_delay_s)  # the model "thinking" between tokens
            await send({"type": "http.response.body", "body": f, "more_body": i < len(frames) - 1})

    http = "httptools" if _has("httptools") else "h11"
    loop = "uvloop" if _has("uvloop") else "asyncio"
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical", access_log=False, http=http, loop=loop,
                backlog=2048)


def serve_assay(port: int, upstream: str, max_concurrency: int) -> None:
    from assay.gateway.standalone import standalone_record, start_standalone

    trace = Path(tempfile.mkdtemp(prefix="assay-bench-trace-")) / "trace.jsonl"  # evidence written, as in a run
    record = standalone_record("upstream", target=f"{upstream}/v1#{MODEL}")
    record = record.model_copy(update={"settings": {**record.settings,
                                                    "limits": {"*": {"max_concurrency": max_concurrency}}}})
    gw = start_standalone(record, port=port, key=KEY, trace=trace)
    print(f"ready {gw.url} {gw.service.server.stack}", flush=True)
    try:
        sys.stdin.read()  # until the bench closes our stdin
    finally:
        gw.stop()


def _has(mod: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(mod) is not None


# ------------------------------------------------------------------------------ processes
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proc:
    """A server process of the bench: started, waited for, measured, stopped."""

    def __init__(self, name: str, argv: list[str], health: str, env: dict[str, str] | None = None):
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"assay-bench-{name}-", suffix=".log", delete=False)
        t0 = time.perf_counter()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
                                  env={**os.environ, **(env or {})}, start_new_session=True)
        deadline = time.monotonic() + 180
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"{name} exited {self.p.returncode} (log: {self.log.name})")
            try:
                if httpx.get(health, timeout=1, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{name} was not ready in 180 s (log: {self.log.name})")
            time.sleep(0.02)  # polling a child's readiness, bounded by the deadline
        self.start_s = time.perf_counter() - t0

    def tree(self) -> set[int]:
        pids = {self.p.pid}
        for d in Path("/proc").iterdir():  # the whole tree: LiteLLM may run workers
            if d.name.isdigit():
                try:
                    stat = (d / "stat").read_text()
                    if int(stat.rsplit(")", 1)[1].split()[1]) in pids:
                        pids.add(int(d.name))
                except (OSError, ValueError, IndexError):
                    pass
        return pids

    def cpu_s(self) -> float:
        """CPU seconds (user + system) used so far by the server's process tree: a cost per request
        that a loaded machine delays but does not inflate, unlike req/s."""
        total = 0
        for pid in self.tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime
            except (OSError, ValueError, IndexError):
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def rss_mib(self) -> float:
        total = 0
        for pid in self.tree():
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            except OSError:
                pass
        return total / 1024

    def stop(self) -> None:
        if self.p.poll() is None:
            try:
                assert self.p.stdin is not None
                self.p.stdin.close()
            except OSError:
                pass
            self.p.terminate()
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(5)


def litellm_binary(venv: Path) -> Path:
    """LiteLLM's proxy from a throwaway venv, created (pip install 'litellm[proxy]') if missing."""
    binary = venv / "bin" / "litellm"
    if not binary.is_file():
        print(f"installing LiteLLM into {venv} (once)...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "litellm[proxy]"], check=True)
    return binary


def start_litellm(venv: Path, upstream: str) -> Proc:
    port = free_port()
    tmp = Path(tempfile.mkdtemp(prefix="assay-bench-litellm-"))
    cfg = {"model_list": [{"model_name": MODEL, "litellm_params": {
        "model": f"openai/{MODEL}", "api_base": upstream + "/v1", "api_key": "sk-upstream"}}],
        "litellm_settings": {"telemetry": False, "drop_params": True}}
    (tmp / "config.yaml").write_text(json.dumps(cfg))
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False", "LITELLM_LOG": "ERROR",
           "NO_PROXY": "127.0.0.1,localhost", "HOME": str(tmp), "LITELLM_MASTER_KEY": KEY}
    argv = [str(litellm_binary(venv)), "--config", str(tmp / "config.yaml"), "--host", "127.0.0.1", "--port", str(port),
            "--num_workers", "1"]
    proc = Proc("litellm", argv, f"http://127.0.0.1:{port}/health/liveliness", env)
    proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    return proc


def start_assay(upstream: str, stack: str | None, max_concurrency: int) -> Proc:
    port = free_port()
    env = {"ASSAY_GATEWAY_SERVER": stack} if stack else {}
    proc = Proc("assay", [sys.executable, __file__, "--serve-assay", str(port), "--upstream", upstream,
                          "--max-concurrency", str(max_concurrency)], f"http://127.0.0.1:{port}/health", env)
    proc.url = f"http://127.0.0.1:{port}"  # type: ignore[attr-defined]
    return proc


# ------------------------------------------------------------------------------ load generator
async def _one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, raw: bytes) -> tuple[float, float]:
    t0 = time.perf_counter()
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    hdrs = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(b":") for ln in head.split(b"\r\n")[1:] if ln)}
    ttfb = None
    if b"content-length" in hdrs:
        await reader.readexactly(int(hdrs[b"content-length"]))
        ttfb = time.perf_counter() - t0
    else:  # chunked
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            await reader.readexactly(size + 2)
            if ttfb is None:
                ttfb = time.perf_counter() - t0
    if status != 200:
        raise RuntimeError(f"HTTP {status}")
    return ttfb or 0.0, time.perf_counter() - t0


async def _load(url: str, stream: bool, conc: int, n: int) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({**BODY, "stream": True, "stream_options": {"include_usage": True}} if stream else BODY).encode()
    raw = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {KEY}\r\n"
           f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    lat: list[float] = []
    ttfb: list[float] = []
    errors = 0
    left = n
    t_end = time.perf_counter() + TIME_CAP_S

    async def worker() -> None:
        nonlocal left, errors
        reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
        try:
            while left > 0 and time.perf_counter() < t_end:
                left -= 1
                try:
                    f, t = await asyncio.wait_for(_one(reader, writer, raw), 60)
                except (RuntimeError, OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
                    errors += 1
                    writer.close()
                    reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
                    continue
                ttfb.append(f)
                lat.append(t)
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    wall = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    return {"n": len(lat), "errors": errors, "p50_ms": statistics.median(lat) * 1e3, "p99_ms": q[98] * 1e3,
            "ttfb_ms": statistics.median(ttfb) * 1e3, "rps": len(lat) / wall}


def load(url: str, stream: bool, conc: int, n: int) -> dict[str, Any]:
    warm = asyncio.run(_load(url, stream, conc, min(n, 50)))  # warm-up: connections, caches, lazy imports
    return {**asyncio.run(_load(url, stream, conc, n)), "warm_n": warm["n"]}


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000, help="requests per row (also capped at 25 s)")
    ap.add_argument("--concurrency", type=int, nargs="*", default=[1, 16, 64])
    ap.add_argument("--chunk-delay-ms", type=float, default=2.0, help="upstream delay between stream chunks")
    ap.add_argument("--stacks", nargs="*", help="also compare these gateway server stacks (ASSAY_GATEWAY_SERVER)")
    ap.add_argument("--max-concurrency", type=int, help="the gateway's per-model cap of concurrent upstream calls "
                    "(default: the highest --concurrency, so no request queues behind the cap; the gateway's own "
                    "default, 16, queues streams beyond 16 for a whole stream each: pass 16 to see it)")
    ap.add_argument("--no-litellm", action="store_true")
    ap.add_argument("--litellm-venv", type=Path, default=Path("/tmp/assay-bench-litellm"))
    ap.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve-assay", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--upstream", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve_upstream:
        serve_upstream(args.serve_upstream, args.chunk_delay_ms / 1000)
        return 0
    if args.serve_assay:
        serve_assay(args.serve_assay, args.upstream, args.max_concurrency or DEFAULT_MAX_CONCURRENCY)
        return 0

    cap = args.max_concurrency or max(args.concurrency)
    uport = free_port()
    up = Proc("upstream", [sys.executable, __file__, "--serve-upstream", str(uport), "--chunk-delay-ms",
                           str(args.chunk_delay_ms)], f"http://127.0.0.1:{uport}/health")
    upstream = f"http://127.0.0.1:{uport}"
    try:
        targets: list[tuple[str, Proc | None]] = [("upstream direct", None)]
        for stack in [None] + list(args.stacks or []):
            p = start_assay(upstream, stack, cap)
            targets.append((f"assay ({stack or 'default'})", p))
        if not args.no_litellm:
            try:
                targets.append(("LiteLLM proxy", start_litellm(args.litellm_venv, upstream)))
            except (RuntimeError, subprocess.CalledProcessError) as e:
                print(f"LiteLLM not measured: {e}")
        print(f"loopback, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
              f"upstream streams {CHUNKS} chunks {args.chunk_delay_ms:g} ms apart; assay's per-model cap of "
              f"concurrent upstream calls: {cap} (its default: {DEFAULT_MAX_CONCURRENCY})")
        print(f"{'target':28} {'mode':6} {'conc':>4} {'n':>5} {'err':>3} {'p50 ms':>8} {'p99 ms':>8} {'+p50':>7} "
              f"{'+p99':>7} {'TTFB ms':>8} {'+TTFB':>7} {'req/s':>7} {'CPU/req':>7} {'RSS MiB':>8} {'start s':>7}")
        for stream in (False, True):
            for conc in args.concurrency:
                base = None
                for name, proc in targets:
                    url = upstream if proc is None else proc.url  # type: ignore[attr-defined]
                    cpu0 = (proc or up).cpu_s()
                    r = load(url, stream, conc, args.n)
                    cpu_ms = ((proc or up).cpu_s() - cpu0) * 1e3 / max(1, r["n"] + r["warm_n"])
                    base = base or r
                    rss = f"{proc.rss_mib():8.1f}" if proc else f"{'':8}"
                    start = f"{proc.start_s:7.2f}" if proc else f"{'':7}"
                    print(f"{name:28} {'stream' if stream else 'json':6} {conc:4d} {r['n']:5d} {r['errors']:3d} "
                          f"{r['p50_ms']:8.2f} {r['p99_ms']:8.2f} {r['p50_ms'] - base['p50_ms']:7.2f} "
                          f"{r['p99_ms'] - base['p99_ms']:7.2f} {r['ttfb_ms']:8.2f} {r['ttfb_ms'] - base['ttfb_ms']:7.2f} "
                          f"{r['rps']:7.0f} {cpu_ms:7.2f} {rss} {start}", flush=True)
        for _, proc in targets:
            if proc is not None:
                proc.stop()
    finally:
        up.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
