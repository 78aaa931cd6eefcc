"""Sandbox overhead: create + run ``true`` + destroy, against a plain subprocess, same run.

    .venv/bin/python bench/sandbox.py [--runs 200] [--backend bwrap]

Prints median and p95 (milliseconds) of both and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from assay.sandbox.base import SandboxSpec
from assay.sandbox.registry import get_backend
from assay.spec.budget import NetworkProfile


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]


async def sandbox_runs(backend_name: str, runs: int) -> list[float]:
    backend = get_backend(backend_name)
    ws = Path(tempfile.mkdtemp(prefix="assay-bench-"))
    times = []
    try:
        for _ in range(runs):
            t0 = time.perf_counter()
            sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none))
            res = await sb.exec(["true"], timeout_s=30)
            await sb.destroy()
            times.append(time.perf_counter() - t0)
            if not res.ok:
                raise SystemExit(f"`true` failed in the sandbox: {res.stderr!r}")
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    return times


def plain_runs(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--backend", default="bwrap")
    args = ap.parse_args()
    plain = plain_runs(args.runs)
    boxed = asyncio.run(sandbox_runs(args.backend, args.runs))
    pm, bm = statistics.median(plain) * 1000, statistics.median(boxed) * 1000
    print(f"plain subprocess   : median {pm:8.2f} ms   p95 {p95(plain) * 1000:8.2f} ms   ({args.runs} runs)")
    print(f"{args.backend:<8} sandbox   : median {bm:8.2f} ms   p95 {p95(boxed) * 1000:8.2f} ms   "
          f"(create + true + destroy)")
    print(f"ratio (median)     : {bm / pm:8.1f}x")


if __name__ == "__main__":
    main()
