"""Evidence benchmark: what strict sealing, `assay verify` and the workspace diff cost.

Prints figures, asserts nothing. Three measurements:
- writing N attempt results through the run directory (each seals its trial's files first),
  per result;
- `verify_run` over that run directory (every sealed digest recomputed), total and per trial;
- building the workspace diff of a workspace with F files of which a tenth changed, and its size.

    python bench/store.py                       # N=2000 results, F=5000 files
    python bench/store.py --results 500 --files 20000

`assay verify` as a command at 10^4 / 10^5 / 10^6 trials, beside `assay score`, `report` and
`export`: `bench/commands.py`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from assay.records.manifest import AgentRecord, PlanRecord, RunManifest
from assay.records.results import AttemptResult, EndState, Timings
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from assay.store.workspace_diff import build_workspace_diff, read_workspace_diff, scan
from assay.trace.writer import TraceWriter


def bench_rundir(n: int, root: Path) -> None:
    trials = [f"t{i}.base.a.r1" for i in range(n)]
    m = RunManifest(run_id="bench", created_at=0.0, harness={}, suite={"name": "bench"}, categories={"code": 1.0},
                    tasks=[], agents=[AgentRecord(name="a", kind="bench")], plan=PlanRecord(trials=trials))
    rd = RunDir.create(root / "run", m)
    t0 = time.perf_counter()
    for i, tid in enumerate(trials):
        rd.mark_started(tid, 1, {})
        w = TraceWriter(rd.trace_path(tid), tid)
        for k in range(20):
            w.emit("agent", "tool_call", {"name": "shell", "arguments": {"command": f"echo {k}"}})
        rd.write_result(AttemptResult(run_id="bench", trial_id=tid, task_id=f"t{i}", category="code", variant="base",
                                      agent="a", repetition=1, attempt=1, end_state=EndState.passed,
                                      timings=Timings(started_at=0.0, ended_at=1.0)))
    write_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = verify_run(rd.path)
    verify_s = time.perf_counter() - t0
    assert report.ok, report.problems[:3]
    print(f"run directory: {n} results written in {write_s:.2f}s ({write_s / n * 1000:.2f} ms each, "
          f"marker + trace seal + result fsynced)")
    print(f"verify_run: {report.checked} digests in {verify_s:.2f}s ({verify_s / n * 1000:.2f} ms per trial)")


def bench_diff(files: int, root: Path) -> None:
    ws = root / "ws"
    for i in range(files):
        p = ws / f"d{i % 50}" / f"f{i}.txt"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"line {i}\n" * 40)
    before = root / "before"
    shutil.copytree(ws, before)
    t0 = time.perf_counter()
    initial = scan(ws)
    scan_s = time.perf_counter() - t0
    for i in range(0, files, 10):
        (ws / f"d{i % 50}" / f"f{i}.txt").write_text("changed\n" * 40)
    t0 = time.perf_counter()
    blob = build_workspace_diff(ws, initial, before=before)
    build_s = time.perf_counter() - t0
    diff = read_workspace_diff(blob)
    raw = sum(len(v) for v in diff.contents.values())
    print(f"workspace diff: scan of {files} files {scan_s:.2f}s; diff of {len(diff.entries)} changed files built in "
          f"{build_s:.2f}s; {raw} content bytes -> {len(blob)} bytes compressed; truncated={diff.truncated}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", type=int, default=2000)
    ap.add_argument("--files", type=int, default=5000)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpu(s)")
    with tempfile.TemporaryDirectory(prefix="assay-bench-store-") as tmp:
        bench_rundir(args.results, Path(tmp))
        bench_diff(args.files, Path(tmp))


if __name__ == "__main__":
    main()
