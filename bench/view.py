"""`assay view` open times and live-update latency (printed, never asserted).

1. The run list over R run directories (default 1,000: one small scored run from bench/score.py's
   generator, copied): the first open (every row built from its manifest and latest score version,
   each checked against its seal, shown "verifying…"), how long the background verification of
   every run takes after it, the next open in the same viewer, and the first open of a new viewer
   process reading the kept, verified rows (``reports/view-row.json``).
2. A run of N trials (default 10^5, bench/score.py's synthetic results in a real run directory,
   scored once): its page's first open, its background verification, the next open and a new
   viewer's open (kept row).
3. Live updates: a real `assay run` of T quick trials; the delay from each result's ledger line
   (written just before the result file appears) to its event on the viewer's server-sent stream.

    python bench/view.py                          # 1,000 runs, 10^5 trials, 20 live trials
    python bench/view.py --runs 200 --trials 10000 --live 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from score import make_rundir  # noqa: E402  bench/score.py's generator

from assay.score.versions import write_score  # noqa: E402
from assay.store.index import build_index  # noqa: E402


def serve(root: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "view", str(root), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line.startswith("assay view: "):
        raise SystemExit(f"the viewer did not start: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
    return proc, line.split(": ", 1)[1].strip().rstrip("/")


def timed_get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=3600) as r:
        body = r.read()
    return time.perf_counter() - t0, len(body)


def cpu_s(proc: subprocess.Popen) -> float:
    """CPU seconds the viewer process used so far (its threads included: /proc/PID/stat), so an open
    can be told apart from the wait for the shared machine's cores."""
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    proc.wait(timeout=30)


def bench_list(root: Path, runs: int) -> dict:
    base = root / "one"
    make_rundir(20, base)
    write_score(base)
    (root / "one.check").exists() and shutil.rmtree(root / "one.check")
    listing = root / "runs"
    listing.mkdir()
    for i in range(runs):
        shutil.copytree(base, listing / f"run{i:04d}")
    (cold, cold_cpu), verified, warm, kept, size = three_opens(listing, "/")
    return {"runs": runs, "first_open_s": cold, "first_open_cpu_s": cold_cpu, "all_verified_after_s": verified,
            "next_open_s": warm, "new_viewer_kept_rows_s": kept, "bytes": size,
            "load_avg_1min": os.getloadavg()[0]}


def wait_verified(url: str) -> float:
    """Seconds until the viewer's background verification has nothing left (polled: a bench only)."""
    t0 = time.perf_counter()
    while True:
        with urllib.request.urlopen(url + "/verifying", timeout=600) as r:
            if not json.loads(r.read())["pending"]:
                return time.perf_counter() - t0
        time.sleep(0.1)


def three_opens(root: Path, page: str) -> tuple[tuple[float, float], float, float, float, int]:
    """A page's first open (wall and the viewer's CPU seconds for it, the background verification
    included as far as it got), the time its background verification took after that, its next
    open in the same viewer, and its open in a new viewer that finds the rows the first one kept
    (seconds), with the page's size in bytes."""
    proc, url = serve(root)
    try:
        before = cpu_s(proc)
        cold, size = timed_get(url + page)
        cold_cpu = cpu_s(proc) - before
        verified = wait_verified(url)
        warm, _ = timed_get(url + page)
    finally:
        stop(proc)
    proc, url = serve(root)
    try:
        kept, _ = timed_get(url + page)
    finally:
        stop(proc)
    return (cold, cold_cpu), verified, warm, kept, size


def bench_big_run(root: Path, trials: int) -> dict:
    runs = root / "big"
    runs.mkdir()
    t0 = time.perf_counter()
    make_rundir(trials, runs / "run")
    shutil.rmtree(runs / "run.check", ignore_errors=True)
    write_score(runs / "run")
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    build_index(runs / "run")  # the derived index the run page lists trials from
    indexed = time.perf_counter() - t0
    (cold, cold_cpu), verified, warm, kept, size = three_opens(runs, "/run/run")
    return {"trials": trials, "generated_s": made, "index_built_s": indexed, "first_open_s": cold,
            "first_open_cpu_s": cold_cpu, "verified_after_s": verified, "next_open_s": warm,
            "new_viewer_kept_row_s": kept, "bytes": size, "load_avg_1min": os.getloadavg()[0]}


def bench_live(root: Path, n: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.conftest import write_agent, write_suite, write_task

    suite = write_suite(root / "suite")
    for i in range(n):
        write_task(suite, f"t{i}", task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": [
            {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    gate = root / "go"
    agent = write_agent(root / "quick.yaml", "quick", f"""
        import os, time
        while not os.path.exists({str(gate)!r}):
            time.sleep(0.01)
        open('out.txt', 'w').write('done')
    """)
    runs = root / "live"
    runs.mkdir()
    run = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(suite), "--agent", str(agent),
                            "--sandbox", "host", "--out", str(runs / "run"), "-q", "-j", "2"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not (runs / "run" / "control.json").exists():
        time.sleep(0.01)
    proc, url = serve(runs)
    got: dict[str, float] = {}
    try:
        stream = urllib.request.urlopen(url + "/run/run/events", timeout=600)

        def read() -> None:
            for raw in stream:
                line = raw.decode().strip()
                if line.startswith("data: "):
                    e = json.loads(line[6:])
                    if e.get("type") == "attempt_finished":
                        got[e["trial_id"]] = time.time()
                    if e.get("type") == "ended":
                        return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        gate.touch()
        run.wait(timeout=600)
        reader.join(timeout=60)
    finally:
        stop(proc)
    sealed = {}
    for line in (runs / "run" / "ledger.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec["path"].endswith("/result.json"):
            sealed[rec["path"].split("/")[1]] = rec["ts"]
    delays = sorted(got[t] - sealed[t] for t in got if t in sealed)
    return {"trials": n, "events": len(delays), "p50_ms": 1000 * delays[len(delays) // 2] if delays else None,
            "max_ms": 1000 * delays[-1] if delays else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--trials", type=int, default=100_000)
    ap.add_argument("--live", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="assay-bench-view-") as tmp:
        root = Path(tmp)
        for name, fn, n in (("run list", bench_list, args.runs), ("big run", bench_big_run, args.trials),
                            ("live", bench_live, args.live)):
            (root / name.replace(" ", "_")).mkdir()
            print(name, json.dumps(fn(root / name.replace(" ", "_"), n)), flush=True)


if __name__ == "__main__":
    main()
