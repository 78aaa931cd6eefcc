"""What a user runs on a run directory, at 10^4 / 10^5 / 10^6 trials: `assay score`, `assay report`
(JSON, Markdown, HTML), `assay export`, `assay verify` and `assay compare` (the run against itself:
two scorings and the paired bootstraps of every metric), each as its own `assay` process (wall
time, CPU time and peak RSS of that process), beside DuckDB computing the headline figures from the
same result files end to end (when duckdb is installed: ``pip install duckdb``), and the kernel's
floor: ``find | xargs cat`` listing and reading every file of ``trials/``, the ledger and the results
log in one process, what any reader pays before it parses anything. Each line ends with the machine's
1-minute load average when the command ended (2 cores: above 2, it waited for a core). CPU time
is the process's and its children's (the scan's reading processes); peak RSS is the largest of
them, not their sum (each reading process holds about 20 MiB).

The run directories are those of ``bench/score.py --rundir`` (the real writer's bytes and ledger
lines, without 10^6 fsyncs), generated once into ``--keep DIR`` and reused.

    python bench/commands.py --sizes 10000 100000 --keep /tmp/runs
    python bench/commands.py --sizes 10000 --only score report-html
    python bench/commands.py --run /work/runs/real-18000 --only score verify   # bench/replicate.py's
    python bench/commands.py --sizes 1000000 --results log --keep /tmp/runs   # results in one log
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASSAY = [sys.executable, "-m", "assay.cli.main"]


def commands(run: Path, out: Path) -> dict[str, list[str]]:
    return {
        "score": [*ASSAY, "score", str(run), "--max-infra-rate", "1"],
        "report-json": [*ASSAY, "report", str(run), "-f", "json", "-o", str(out / "report.json")],
        "report-md": [*ASSAY, "report", str(run), "-f", "md", "-o", str(out / "report.md")],
        "report-html": [*ASSAY, "report", str(run), "-f", "html", "-o", str(out / "report.html")],
        "export": [*ASSAY, "export", str(run), "-f", "jsonl", "-o", str(out / "export.jsonl")],
        "verify": [*ASSAY, "verify", str(run)],
        "compare": [*ASSAY, "compare", str(run), str(run)],
    }


def measure(argv: list[str], src: Path | None = None) -> dict[str, float]:
    """One process: wall seconds, CPU seconds (user + system) and peak RSS in MiB, from wait4
    (``src``: another assay checkout's ``src`` folder to run instead of this one, for a before figure)."""
    env = {**os.environ, "PYTHONPATH": str(src)} if src is not None else None
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1, 4):  # 1: a gate, 4: the infra-rate gate; anything else is a broken bench
        raise SystemExit(f"{' '.join(argv)} exited {code}: {err[-2000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024}


def floor_paths(run: Path) -> str:
    """What the floor reads: every file of ``trials/``, and the ledger and the results log, which
    every command reads whole too (quoted for ``sh``)."""
    return " ".join(f"'{p}'" for p in (run / "trials", run / "ledger.jsonl", run / "results.jsonl") if p.exists())


def duckdb_figures(run: Path, source: str = "files") -> dict[str, float] | None:
    """DuckDB end to end: strict rate, cost, tokens and p95 wall per agent, over the run's result
    files (``files``) or over ``assay export``'s JSON Lines of the same run (``export``)."""
    try:
        import duckdb  # noqa: F401 - only whether it is installed
    except ImportError:
        return None
    if source == "files":
        where = (f"'{run}/results.jsonl', format='newline_delimited'" if (run / "results.jsonl").is_file()
                 else f"'{run}/trials/*/attempts/*/result.json', format='auto'")
        query = f"""select agent, count(*), avg((end_state = 'pass')::int), sum(usage.cost_usd),
            sum(usage.input_tokens + usage.output_tokens), quantile_cont(timings.ended_at - timings.started_at, 0.95)
            from read_json({where}) group by agent"""
    else:
        query = f"""select agent, count(*), avg(strict_pass::int), sum(cost_usd), sum(input_tokens + output_tokens),
            quantile_cont(wall_s, 0.95) from read_json('{source}', format='newline_delimited') where final
            group by agent"""
    code = f"""
import duckdb
con = duckdb.connect()
con.execute("set threads to 2")
print(con.execute({query!r}).fetchall())
"""
    r = measure([sys.executable, "-c", code])
    return r


def planned(run: Path) -> int:
    """The trials a run planned (a run of the results log has no trial folders to count)."""
    return len(json.loads((run / "manifest.json").read_bytes())["plan"]["trials"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--keep", type=Path, help="where the generated run directories are kept (with --sizes)")
    ap.add_argument("--run", type=Path, nargs="*", default=[], help="existing run directories to measure instead "
                    "(a real run, or bench/replicate.py's copies of one: traces, diffs and artifacts included)")
    ap.add_argument("--results", choices=["files", "log"], default="files", help="where the generated runs keep "
                    "their results: a file per result, or the results log (assay run --results log)")
    ap.add_argument("--src", type=Path, help="run the assay of this src folder (a before figure)")
    ap.add_argument("--only", nargs="*", help="run only these commands (score, report-json, report-md, "
                    "report-html, export, verify, floor, duckdb-files, duckdb-jsonl: over the export's file)")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
    print(f"{'trials':>9}  {'command':<12} {'wall s':>8} {'CPU s':>8} {'peak RSS MiB':>13} {'load':>5}")
    if args.run:
        args.sizes = []
    elif args.keep is None:
        ap.error("--keep DIR is needed to generate run directories (or give --run DIR...)")
    suffix = "" if args.results == "files" else "-log"
    targets = [(n, args.keep / f"run-{n}{suffix}") for n in args.sizes]
    targets += [(planned(r), r) for r in args.run]
    for n, run in targets:
        if not (run / "manifest.json").is_file():
            subprocess.run([sys.executable, str(HERE / "score.py"), "--phase", "make-rundir", "--n", str(n),
                            "--file", str(run), "--results", args.results], check=True, stdout=subprocess.DEVNULL)
        with tempfile.TemporaryDirectory(prefix="assay-bench-cmd-") as tmp:
            for name, argv in commands(run, Path(tmp)).items():
                if args.only and name not in args.only:
                    continue
                r = measure(argv, args.src)
                print(f"{n:>9,d}  {name:<12} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['rss_mib']:13.1f} "
                      f"{os.getloadavg()[0]:5.1f}", flush=True)
            if not args.only or "floor" in args.only:
                r = measure(["sh", "-c", f"find {floor_paths(run)} -type f -print0 | xargs -0 cat > /dev/null"])
                print(f"{n:>9,d}  {'floor':<12} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['rss_mib']:13.1f} "
                      f"{os.getloadavg()[0]:5.1f}", flush=True)
            for what, source in (("duckdb-files", "files"), ("duckdb-jsonl", str(Path(tmp) / "export.jsonl"))):
                if args.only and what not in args.only or (source != "files" and not Path(source).is_file()):
                    continue
                d = duckdb_figures(run, source)
                if d is None:
                    print(f"{n:>9,d}  {what:<12} not installed (pip install duckdb)")
                    break
                print(f"{n:>9,d}  {what:<12} {d['wall_s']:8.2f} {d['cpu_s']:8.2f} {d['rss_mib']:13.1f} "
                      f"{os.getloadavg()[0]:5.1f}", flush=True)
        shutil.rmtree(run / "reports", ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
