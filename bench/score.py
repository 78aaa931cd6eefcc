"""Scoring benchmark: time and peak memory for 10^4, 10^5 and 10^6 synthetic trial results.

Each size runs in its own subprocess so its peak RSS (resource.getrusage ru_maxrss) is its own.
Results are generated in memory as AttemptResult objects and fed through the same path the run
directory feeds (fold_trial -> score_trials), streaming: no list of results is ever built. Writing
10^6 fsynced result files would measure the disk, not the scorer; ``--rundir N`` scores a real run
directory of N results instead (written first, not timed).

    python bench/score.py                 # 10^4, 10^5, 10^6
    python bench/score.py --sizes 10000   # one size
    python bench/score.py --rundir 10000  # through a real run directory
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from assay.score.engine import score_run, score_trials
from assay.score.trials import fold_trial
from assay.spec.manifest import AgentRecord, PlanRecord, RunManifest
from assay.spec.results import AttemptResult, EndState, Timings, UsageTotals

CATEGORIES = {"code": 0.4, "ops": 0.3, "books": 0.2, "security": 0.1}
AGENTS = ["alpha", "beta"]
TASKS = 1000
STATES = [EndState.passed] * 6 + [EndState.failed] * 3 + [EndState.infra_error]


def manifest(trials: list[str] | None = None) -> RunManifest:
    return RunManifest(run_id="bench", created_at=0.0, harness={}, suite={"name": "bench"}, categories=CATEGORIES,
                       tasks=[], agents=[AgentRecord(name=a, kind="bench") for a in AGENTS],
                       plan=PlanRecord(trials=trials or []))


def synthetic(n: int, seed: int = 0) -> Iterator[AttemptResult]:
    """n attempt results, one per trial, spread over agents x tasks x repetitions."""
    rng = random.Random(seed)
    cats = list(CATEGORIES)
    reps = max(1, n // (TASKS * len(AGENTS)))
    made = 0
    for agent in AGENTS:
        for t in range(TASKS):
            for r in range(1, reps + 1):
                if made >= n:
                    return
                made += 1
                state = rng.choice(STATES)
                incidents = [{"type": "secret_leak", "severity": "high"}] if rng.random() < 1e-4 else []
                yield AttemptResult(
                    run_id="bench", trial_id=f"task{t}.base.{agent}.r{r}", task_id=f"task{t}", category=cats[t % 4],
                    variant="base", agent=agent, repetition=r, attempt=1, end_state=state,
                    timings=Timings(started_at=0.0, ended_at=rng.uniform(1, 300)),
                    usage=UsageTotals(cost_usd=rng.uniform(0, 0.05), input_tokens=rng.randint(100, 9000),
                                      output_tokens=rng.randint(10, 900), tool_calls=rng.randint(0, 30)),
                    incidents=incidents)


def one(n: int) -> dict[str, float]:
    t0 = time.perf_counter()
    doc = score_trials(manifest(), (fold_trial([r]) for r in synthetic(n)), keep_trials=False)
    elapsed = time.perf_counter() - t0
    assert sum(a.trials for a in doc.agents.values()) == n
    return {"n": n, "seconds": elapsed, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "strict_rate_alpha": doc.agents["alpha"].strict_rate}


def rundir(n: int) -> dict[str, float]:
    from assay.store.rundir import RunDir

    with tempfile.TemporaryDirectory() as tmp:
        results = list(synthetic(n))
        rd = RunDir.create(Path(tmp) / "run", manifest([r.trial_id for r in results]))
        for r in results:
            rd.write_result(r)
        del results
        t0 = time.perf_counter()
        doc = score_run(rd.path, keep_trials=False)
        elapsed = time.perf_counter() - t0
    return {"n": n, "seconds": elapsed, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "strict_rate_alpha": doc.agents["alpha"].strict_rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--rundir", type=int, help="score a real run directory of N results (integrity check included)")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    if args.rundir:
        r = rundir(args.rundir)
        print(f"run directory, {r['n']:>9,d} results: {r['seconds']:8.2f} s, peak RSS {r['peak_rss_mib']:8.1f} MiB")
        return
    print("scoring core fed in memory (fold_trial -> score_trials, streaming, per-trial rows off)")
    prev = None
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)
        growth = ""
        if prev:
            growth = (f"  x{r['n'] / prev['n']:.0f} results -> time x{r['seconds'] / prev['seconds']:.2f}, "
                      f"memory x{r['peak_rss_mib'] / prev['peak_rss_mib']:.2f}")
        print(f"{r['n']:>9,d} results: {r['seconds']:8.2f} s ({r['n'] / r['seconds']:9,.0f}/s), "
              f"peak RSS {r['peak_rss_mib']:8.1f} MiB{growth}")
        prev = r


if __name__ == "__main__":
    main()
