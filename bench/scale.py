"""Trials per second on 1, 2, 3 local Ray nodes next to the local executor, in the same run of
this script, and the head's memory with 10^4 trials.

    .venv/bin/python bench/scale.py [--trials 24] [--nodes 1 2 3] [--slots 2] [--head-trials 10000]
                                    [--deadline 600]

Bounded: every campaign has a deadline (``--deadline`` seconds; an attempt still running then is
closed and the figure says so), and a node that does not answer an attempt is given up after the
task's wall time twice plus 60 s (``ASSAY_RAY_ANSWER_GRACE_S``), so the script always ends: about
6 minutes on a quiet 2-core machine with the defaults, most of it the 10^4-trial head figure.

Every trial is real: a fresh workspace, the agent (the built-in ``nop``) in the default sandbox
(bwrap where usable), the verifier in its own sandbox, the result written by the head. Each
cluster is a real local one (tests/run/cluster/cluster.py: a head and N worker nodes as separate
processes). "wall" counts everything from the command to the last result (the Ray runs include
joining the cluster and starting the node workers); "steady" is trials over the span from the
first attempt's start to the last one's end. All nodes share this machine's cores (printed), so
more nodes can only add parallel slots up to the core count, not capacity.

The head's memory: a campaign of ``--head-trials`` trials on one node whose worker hands back a
canned finished attempt (a real one, recorded first) instead of running it, so what grows is the
head alone: the plan, its scheduling state, the attempts in flight and the run directory's writes.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assay.records.results import AttemptResult  # noqa: E402
from assay.run import RunOptions, start_run  # noqa: E402
from assay.run.schedule import ExecutorOptions  # noqa: E402
from tests.conftest import write_suite, write_task  # noqa: E402
from tests.run.cluster.cluster import LocalRayCluster  # noqa: E402


def suite(root: Path) -> Path:
    s = write_suite(root / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": 60},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]},
               workspace={"README": "nothing to do\n"})
    return s


def rates(results: list[AttemptResult], wall: float) -> tuple[float, float]:
    span = max(r.timings.ended_at for r in results) - min(r.timings.started_at for r in results)
    return len(results) / wall, len(results) / span


def cpu_s(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


@dataclass
class Figure:
    per_wall: float
    steady: float
    trials: int  # trials that ended (the nop agent fails the task: the verifier ran and said so)
    closed: int  # attempts the deadline or a lost node closed
    cpu_ms: float = 0.0  # per trial: this process and every process it started, once reaped

    def line(self, base: "Figure | None" = None) -> str:
        ratio = (lambda a, b: f" ({a / b:.2f}x local)") if base else (lambda a, b: "")
        out = (f"{self.trials} trials, {self.per_wall:.2f} trials/s wall{ratio(self.per_wall, base.per_wall if base else 1)}, "
               f"{self.steady:.2f} steady{ratio(self.steady, base.steady if base else 1)}, "
               f"CPU {self.cpu_ms:.0f} ms per trial (all processes)")
        return out + (f"; {self.closed} attempt(s) closed unfinished" if self.closed else "")


def run(s: Path, out: Path, trials: int, jobs: int, where: ExecutorOptions, deadline: float) -> Figure:
    t0 = time.monotonic()
    outcome = start_run(RunOptions(suite=s, agents=["nop"], repeat=trials, jobs=jobs, out=out, executor=where,
                                   deadline_s=deadline))
    wall = time.monotonic() - t0
    done = [r for r in outcome.results if not r.partial]
    per_wall, steady = rates(done, wall) if done else (0.0, 0.0)
    return Figure(per_wall, steady, len(done), len(outcome.results) - len(done))


def head_memory(s: Path, root: Path, sample: Path, trials: int, deadline: float) -> dict[str, float]:
    """Peak RSS of this process (the head) through a campaign of canned attempts."""
    import ray

    from assay.run.cluster import executor as ray_executor
    from assay.run.cluster.worker import FinishedAttempt
    from assay.store.rundir import RunDir
    from assay.trace.writer import read_events

    rd = RunDir.open(sample)
    res = rd.results()[0]
    events = tuple(read_events(rd.trace_path(res.trial_id), attempt=res.attempt))
    artifacts = {d: rd.read_artifact(d) for d in res.artifacts.values()}

    class Canned:
        """A node worker that answers every attempt with the recorded one, renamed."""

        def __init__(self, manifest_json: str, *_: Any) -> None:
            self.run_id = __import__("json").loads(manifest_json)["run_id"]

        def facts(self) -> dict[str, Any]:
            return {}

        def close(self) -> None:
            pass

        async def run(self, trial_id: str, attempt: int, retry_reason: str | None) -> FinishedAttempt:
            r = res.model_copy(update={"run_id": self.run_id, "trial_id": trial_id, "attempt": attempt})
            evs = tuple(e.model_copy(update={"trial_id": trial_id, "attempt": attempt}) for e in events)
            return FinishedAttempt(r, evs, artifacts, {}, "canned")

    cluster = LocalRayCluster(root / "mem", read_only=())
    real = ray_executor._RayNodeWorker
    try:
        cluster.start(workers=1, slots=64)
        ray_executor._RayNodeWorker = Canned  # type: ignore[assignment, misc]
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0 = time.monotonic()
        out = start_run(RunOptions(suite=s, agents=["nop"], repeat=trials, jobs=64, out=root / "mem-run",
                                   deadline_s=deadline, executor=ExecutorOptions("ray", cluster.address)))
        wall = time.monotonic() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return {"trials": len(out.results), "rss_before_mib": before, "rss_peak_mib": peak, "wall_s": wall}
    finally:
        ray_executor._RayNodeWorker = real
        ray.shutdown()
        cluster.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=24)
    ap.add_argument("--nodes", type=int, nargs="*", default=[1, 2, 3])
    ap.add_argument("--slots", type=int, default=2, help="attempt slots per worker node")
    ap.add_argument("--head-trials", type=int, default=10_000, help="0: skip the head memory figure")
    ap.add_argument("--deadline", type=float, default=600.0, help="seconds each campaign may take at most")
    args = ap.parse_args()
    os.environ.setdefault("ASSAY_RAY_ANSWER_GRACE_S", "60")  # a hung node is given up, never waited for
    import ray

    cores = len(os.sched_getaffinity(0))
    print(f"cores available: {cores} (os.cpu_count {os.cpu_count()}); load average {os.getloadavg()[0]:.1f}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="assay-bench-scale-") as tmp:
        root = Path(tmp)
        s = suite(root)
        local_jobs = max(1, cores)
        c0 = cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN)
        local = run(s, root / "local", args.trials, local_jobs, ExecutorOptions(), args.deadline)
        local.cpu_ms = (cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN) - c0) * 1000 / max(1, local.trials)
        print(f"local executor, -j {local_jobs}: {local.line()}", flush=True)
        for k in args.nodes:
            cluster = LocalRayCluster(root / f"c{k}", read_only=())
            try:
                cluster.start(workers=k, slots=args.slots)
                c0 = cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN)
                fig = run(s, root / f"ray{k}", args.trials, k * args.slots, ExecutorOptions("ray", cluster.address),
                          args.deadline)
            finally:
                ray.shutdown()
                cluster.stop()  # the nodes reaped: their CPU (and their sandboxes') is counted
            # the cluster's CPU includes its own start and idle work during the campaign
            fig.cpu_ms = (cpu_s(resource.RUSAGE_SELF) + cpu_s(resource.RUSAGE_CHILDREN) - c0) * 1000 / max(1, fig.trials)
            print(f"ray, {k} node(s) x {args.slots} slots: {fig.line(local)}", flush=True)
        if args.head_trials:
            m = head_memory(s, root, root / "local", args.head_trials, 3 * args.deadline)
            print(f"head memory, {m['trials']:.0f} canned trials on one node: RSS {m['rss_before_mib']:.0f} MiB before, "
                  f"peak {m['rss_peak_mib']:.0f} MiB ({(m['rss_peak_mib'] - m['rss_before_mib']) * 1024 / m['trials']:.1f}"
                  f" KiB per trial), {m['trials'] / m['wall_s']:.0f} trials/s through the head")
    print(f"bench took {time.monotonic() - started:.0f} s; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
