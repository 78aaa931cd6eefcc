"""Scoring benchmark: 10^4, 10^5 and 10^6 synthetic attempt results, input generation apart from
scoring, next to pandas and DuckDB aggregating the same data.

Three phases, each in its own process (so each peak RSS is its own):

1. generate (not timed): N attempt results as JSON lines in a file, one per trial, spread over
   2 agents x 1,000 tasks x repetitions (the run directory's result files, without 10^6 fsyncs);
2. score, streaming from that file: parse each line (AttemptResult), fold its trial, aggregate,
   finish: the time and peak memory of scoring N results, and the part spent aggregating;
3. aggregation alone on the same trial facts, held in memory: assay's Aggregator, then pandas
   and DuckDB (if installed) computing the same per-unit, per-(agent, category, repetition) and
   per-agent groupings (sums, counts, wall-time percentiles of successes);
4. end to end beside phase 2: DuckDB (if installed) reading the same JSON-lines file itself
   (``read_json``) and computing those groupings, on every core and on one; the ratio printed is
   assay's score time over DuckDB's on every core (the issue's goal: within 2x).

    python bench/score.py                       # 10^4, 10^5, 10^6
    python bench/score.py --sizes 10000         # one size
    python bench/score.py --rundir 10000        # through a real run directory (integrity check included)
    python bench/score.py --rundir 10000 1000000 --keep /tmp/runs   # generate once, score again later

What a user runs on a run directory (`assay score`, `report`, `export`, `verify`, each its own
process, beside DuckDB) is `bench/commands.py`; the timelines of the HTML report, `bench/timeline.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from assay.records.manifest import AgentRecord, PlanRecord, RunManifest
from assay.records.results import AttemptResult, EndState, Timings, UsageTotals
from assay.score.aggregate import Aggregator
from assay.score.capability import DEFAULT_WEIGHTS
from assay.score.engine import score_run, score_trials
from assay.score.trials import TrialFacts, fold_trial
from assay.store.fastread import decode_result

CATEGORIES = {"code": 0.4, "ops": 0.3, "books": 0.2, "security": 0.1}
AGENTS = ["alpha", "beta"]
TASKS = 1000
STATES = [EndState.passed] * 6 + [EndState.failed] * 3 + [EndState.infra_error]


def manifest(trials: list[str] | None = None, results: str = "files") -> RunManifest:
    return RunManifest(run_id="bench", created_at=0.0, harness={}, suite={"name": "bench"}, categories=CATEGORIES,
                       tasks=[], agents=[AgentRecord(name=a, kind="bench") for a in AGENTS],
                       plan=PlanRecord(trials=trials or [], results=results))


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


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------------------ phases
def generate(n: int, out: Path) -> dict:
    t0 = time.perf_counter()
    with open(out, "w") as f:
        for r in synthetic(n):
            f.write(r.model_dump_json() + "\n")
    return {"n": n, "seconds": time.perf_counter() - t0, "bytes": out.stat().st_size}


def facts_from(path: Path) -> Iterator[TrialFacts]:
    """Each line parsed by the scorer's reader of result files (msgspec, pydantic for what it refuses)."""
    with open(path, "rb") as f:
        for line in f:
            yield fold_trial([decode_result(line, path)])


def cpu_s() -> float:
    """CPU seconds of this process (all threads): what the machine's load delays but does not add to."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def score_file(path: Path) -> dict:
    """Phase 2: stream the file through the scoring core; reading (parse + fold) is timed apart."""
    t0, c0 = time.perf_counter(), cpu_s()
    it = facts_from(path)
    read = 0.0

    def reader() -> Iterator[TrialFacts]:
        nonlocal read
        while True:
            t = time.perf_counter()
            x = next(it, None)
            read += time.perf_counter() - t
            if x is None:
                return
            yield x

    doc = score_trials(manifest(), reader(), keep_trials=False)
    total = time.perf_counter() - t0
    n = sum(a.trials for a in doc.agents.values())
    return {"n": n, "seconds": total, "cpu_s": cpu_s() - c0, "parse_fold_s": read, "aggregate_s": total - read,
            "peak_rss_mib": peak_mib(),
            "strict_rate_alpha": doc.agents["alpha"].strict_rate}


def aggregate_only(path: Path) -> dict:
    """Phase 3: the same trial facts in memory, aggregated by assay, pandas and DuckDB."""
    facts = list(facts_from(path))
    out: dict = {"n": len(facts)}
    t0 = time.perf_counter()
    agg = Aggregator(keep_trial_ids=False)
    for f in facts:
        agg.add(f)
    doc = agg.finish(CATEGORIES, dict(DEFAULT_WEIGHTS))
    out["assay_s"] = time.perf_counter() - t0
    out["assay_units"] = len(doc["tasks"])
    cols = {k: [getattr(f, k) for f in facts] for k in (
        "agent", "task_id", "variant", "category", "repetition", "end_state", "strict_pass", "safe_pass", "danger",
        "diagnostic", "cost_usd", "tokens", "tool_calls", "interventions", "model_calls", "attempts",
        "infra_attempts", "wall_s")}
    del facts
    try:
        import pandas as pd
    except ImportError:
        out["pandas"] = "pandas not installed"
    else:
        df = pd.DataFrame(cols)
        t0 = time.perf_counter()
        scored = df[df.end_state != "skipped"]
        units = scored.groupby(["agent", "task_id", "variant"], sort=True).agg(
            n=("strict_pass", "size"), passes=("strict_pass", "sum"), safe=("safe_pass", "sum"),
            danger=("danger", "sum"), diag=("diagnostic", "mean"), cost=("cost_usd", "sum"))
        reps = scored.groupby(["agent", "category", "repetition"]).strict_pass.mean()
        per_agent = df.groupby("agent").agg(trials=("agent", "size"), cost=("cost_usd", "sum"), tokens=("tokens", "sum"),
                                            tools=("tool_calls", "sum"), attempts=("attempts", "sum"),
                                            infra=("infra_attempts", "sum"))
        walls = scored[scored.strict_pass].groupby("agent").wall_s.quantile([0.5, 0.95])
        cats = scored.groupby(["agent", "category"]).strict_pass.agg(["size", "sum"])
        out["pandas_s"] = time.perf_counter() - t0
        out["pandas_units"] = len(units)
        assert len(reps) and len(per_agent) and len(walls) and len(cats)
        try:
            import duckdb
        except ImportError:
            out["duckdb"] = "duckdb not installed"
        else:
            con = duckdb.connect()
            con.register("t", df)
            t0 = time.perf_counter()
            n_units = con.execute("""select count(*) from (select agent, task_id, variant, count(*), sum(strict_pass::int),
                sum(safe_pass::int), sum(danger), avg(diagnostic), sum(cost_usd) from t where end_state <> 'skipped'
                group by all)""").fetchone()[0]
            con.execute("""select agent, category, repetition, avg(strict_pass::int) from t where end_state <> 'skipped'
                group by all""").fetchall()
            con.execute("""select agent, count(*), sum(cost_usd), sum(tokens), sum(tool_calls), sum(attempts),
                sum(infra_attempts) from t group by all""").fetchall()
            con.execute("""select agent, quantile_cont(wall_s, 0.5), quantile_cont(wall_s, 0.95) from t
                where strict_pass group by all""").fetchall()
            con.execute("""select agent, category, count(*), sum(strict_pass::int) from t where end_state <> 'skipped'
                group by all""").fetchall()
            out["duckdb_s"] = time.perf_counter() - t0
            out["duckdb_units"] = n_units
    out["peak_rss_mib"] = peak_mib()
    return out


#: phase 4: DuckDB end to end over the same file, the groupings of phase 3
DUCKDB_E2E = ["""create temp table t as select agent, task_id, variant, category, repetition, end_state,
    end_state = 'pass' as strict_pass, diagnostic_score, usage.cost_usd as cost_usd,
    usage.input_tokens + usage.output_tokens as tokens, usage.tool_calls as tool_calls, attempt,
    timings.ended_at - timings.started_at as wall_s from read_json('{file}', format='newline_delimited')""",
    """select agent, task_id, variant, count(*), sum(strict_pass::int), avg(diagnostic_score), sum(cost_usd)
    from t where end_state <> 'skipped' group by all""",
    "select agent, category, repetition, avg(strict_pass::int) from t where end_state <> 'skipped' group by all",
    "select agent, count(*), sum(cost_usd), sum(tokens), sum(tool_calls), sum(attempt) from t group by all",
    "select agent, quantile_cont(wall_s, 0.5), quantile_cont(wall_s, 0.95) from t where strict_pass group by all",
    "select agent, category, count(*), sum(strict_pass::int) from t where end_state <> 'skipped' group by all"]


def duckdb_file(path: Path, threads: int) -> dict:
    """Phase 4: DuckDB parses the result JSON lines itself and computes the groupings (0 threads:
    DuckDB's default, every core)."""
    try:
        import duckdb
    except ImportError:
        return {"duckdb": "duckdb not installed"}
    t0, c0 = time.perf_counter(), cpu_s()
    con = duckdb.connect()
    if threads:
        con.execute(f"set threads to {threads}")
    for q in DUCKDB_E2E:
        con.execute(q.format(file=str(path).replace("'", "''"))).fetchall()
    n = con.execute("select count(*) from t").fetchone()[0]
    return {"n": n, "seconds": time.perf_counter() - t0, "cpu_s": cpu_s() - c0, "peak_rss_mib": peak_mib()}


def make_rundir(n: int, path: Path, results: str = "files") -> dict:
    """A run directory of n results with the very bytes and ledger lines ``RunDir.write_result``
    writes (checked on the first results against the real writer), without its per-write fsyncs:
    10^6 fsyncs would measure the disk, not the scorer. ``results``: a file per result, or the log
    (``assay run --results log``)."""
    from assay.spec.digest import sha256_bytes
    from assay.store.results_log import LOG, log_key
    from assay.store.rundir import LEDGER, TRIALS, RunDir

    t0 = time.perf_counter()
    results_ = synthetic(n)
    rd = RunDir.create(path, manifest([r.trial_id for r in synthetic(n)], results))
    check = RunDir.create(path.parent / (path.name + ".check"), manifest([], results))
    with open(path / LEDGER, "a") as ledger, open(path / LOG, "ab") as log:
        for i, r in enumerate(results_):
            if results == "log":
                rel, data = log_key(r.trial_id, r.attempt), r.model_dump_json().encode()
                log.write(data + b"\n")
            else:
                rel = f"{TRIALS}/{r.trial_id}/attempts/{r.attempt}/result.json"
                data = (r.model_dump_json(indent=2) + "\n").encode()
                (path / rel).parent.mkdir(parents=True)
                (path / rel).write_bytes(data)
            ledger.write(json.dumps({"path": rel, "sha256": sha256_bytes(data), "ts": time.time()}, sort_keys=True) + "\n")
            if i < 3:  # the same bytes as the real writer
                written = check.write_result(r)
                if results == "log":
                    assert written.read_bytes().splitlines()[i] == data
                else:
                    assert written.read_bytes() == data
    if results != "log":
        (path / LOG).unlink()
    return {"n": n, "seconds": time.perf_counter() - t0, "path": str(rd.path)}


def score_rundir(path: Path) -> dict:
    t0, c0 = time.perf_counter(), cpu_s()
    doc = score_run(path, keep_trials=False)
    elapsed = time.perf_counter() - t0
    return {"n": sum(a.trials for a in doc.agents.values()), "seconds": elapsed, "cpu_s": cpu_s() - c0,
            "peak_rss_mib": peak_mib(),
            "strict_rate_alpha": doc.agents["alpha"].strict_rate}


def _child(*args: str) -> dict:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--phase", choices=["generate", "score", "aggregate", "duckdb", "make-rundir", "score-rundir"], help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--rundir", type=int, nargs="*", help="score real run directories of N results (integrity check "
                    "included); generated into --keep DIR once and reused when given")
    ap.add_argument("--keep", type=Path, help="where generated run directories are kept between invocations")
    ap.add_argument("--results", choices=["files", "log"], default="files", help="where the generated runs keep "
                    "their results: a file per result, or the results log (assay run --results log)")
    args = ap.parse_args()
    if args.phase == "generate":
        print(json.dumps(generate(args.n, args.file)))
        return
    if args.phase == "score":
        print(json.dumps(score_file(args.file)))
        return
    if args.phase == "aggregate":
        print(json.dumps(aggregate_only(args.file)))
        return
    if args.phase == "duckdb":
        print(json.dumps(duckdb_file(args.file, args.threads)))
        return
    if args.phase == "make-rundir":
        print(json.dumps(make_rundir(args.n, args.file, args.results)))
        return
    if args.phase == "score-rundir":
        print(json.dumps(score_rundir(args.file)))
        return
    if args.rundir:
        with tempfile.TemporaryDirectory(prefix="assay-bench-rundir-") as tmp:
            keep = args.keep or Path(tmp)
            for n in args.rundir:
                path = keep / (f"run-{n}" if args.results == "files" else f"run-{n}-log")
                if not (path / "manifest.json").is_file():
                    g = _child("--phase", "make-rundir", "--n", str(n), "--file", str(path), "--results", args.results)
                    print(f"generated {n:,d} results in {g['seconds']:.1f} s (not timed below)", flush=True)
                r = _child("--phase", "score-rundir", "--file", str(path))
                assert r["n"] == n
                print(f"run directory, {r['n']:>9,d} results: {r['seconds']:8.2f} s ({r['cpu_s']:.2f} s CPU), peak RSS "
                      f"{r['peak_rss_mib']:8.1f} MiB, load average {os.getloadavg()[0]:.1f}", flush=True)
        return
    with tempfile.TemporaryDirectory(prefix="assay-bench-score-") as tmp:
        print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
        print(f"{'results':>9}  {'generate s':>10} | {'score s':>8} {'CPU s':>7} {'parse+fold':>10} {'aggregate':>9} "
              f"{'RSS MiB':>8} | aggregation alone: {'assay s':>8} {'pandas s':>8} {'duckdb s':>8} | "
              f"end to end: {'duckdb s':>8} {'1 thread':>8} {'assay/duckdb':>12}")
        for n in args.sizes:
            f = (args.keep or Path(tmp)) / f"results-{n}.jsonl"
            g = {"seconds": float("nan")}  # kept from an earlier invocation: not generated again
            if not f.is_file():
                g = _child("--phase", "generate", "--n", str(n), "--file", str(f))
            s = _child("--phase", "score", "--file", str(f))
            a = _child("--phase", "aggregate", "--file", str(f))
            d = [_child("--phase", "duckdb", "--file", str(f), "--threads", str(t)) for t in (0, 1)]
            assert s["n"] == n and a["n"] == n and all(x.get("n", n) == n for x in d)
            e2e = (f"{d[0]['seconds']:8.2f} {d[1]['seconds']:8.2f} {s['seconds'] / d[0]['seconds']:11.1f}x"
                   if "seconds" in d[0] else "DuckDB not installed")
            pd_s = f"{a['pandas_s']:8.2f}" if "pandas_s" in a else "       -"
            dd_s = f"{a['duckdb_s']:8.2f}" if "duckdb_s" in a else "       -"
            print(f"{n:>9,d}  {g['seconds']:10.2f} | {s['seconds']:8.2f} {s['cpu_s']:7.2f} {s['parse_fold_s']:10.2f} "
                  f"{s['aggregate_s']:9.2f} "
                  f"{s['peak_rss_mib']:8.1f} | {'':19}{a['assay_s']:8.2f} {pd_s} {dd_s} | {'':12}{e2e}", flush=True)
            if args.keep is None:
                f.unlink()


if __name__ == "__main__":
    main()
