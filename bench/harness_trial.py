"""The harness's marginal one-sandbox trial, for bench/sandbox.py: a whole attempt through
``start_run`` (plan, workspace, the agent's sandbox, the declarative verifier on the host, the
sealed result in the run directory), with the same command the floors run.

The marginal cost is a difference of two campaigns of the same task at the same ``jobs``: one of
``jobs`` trials and one of ``jobs + trials`` trials, so what every run pays once (loading the
suite, the manifest, the services, the executor's start and end) cancels and what is left is what
one more trial costs at that concurrency: wall time and CPU (the bench's own counter: every
process it started) per trial, and the CPU of the runner's own process alone (the head: under
``--executor procs`` the part no worker takes off it, the bound on its wall time per trial with
cores to spare)."""

from __future__ import annotations

import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from assay.run import RunOptions, start_run  # noqa: E402
from assay.run.schedule import ExecutorOptions  # noqa: E402
from tests.conftest import write_suite, write_task  # noqa: E402

#: the agent's command of the floors, as the task's reference solution (the oracle runs it in
#: the agent's sandbox: one exec), checked by a declarative predicate (no second sandbox)
SOLUTION = "#!/bin/sh\necho 42 > /workspace/answer\n"


def one_sandbox_suite(root: Path) -> Path:
    """A suite of one task whose trial is one sandbox running the floors' agent command."""
    s = write_suite(root / "suite")
    write_task(s, "answer", task={"category": "code", "budget": {"wall_time_s": 60},
                                  "predicates": [{"id": "answer", "kind": "file_contains", "path": "answer",
                                                  "text": "42"}]},
               workspace={"README": "write 42 to answer\n"}, solution=SOLUTION)
    return s


def own_cpu_s() -> float:
    """CPU seconds of this process alone (every thread; no child): the runner's, the head's."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def campaign(suite: Path, trials: int, jobs: int, executor: str,
             cpu_s: Callable[[], float]) -> tuple[float, float, float]:
    """Wall, CPU and the runner's own CPU seconds of one campaign of ``trials`` trials (every one must pass)."""
    out = Path(tempfile.mkdtemp(prefix="bench-harness-")) / "run"
    t0, c0, h0 = time.perf_counter(), cpu_s(), own_cpu_s()
    try:
        outcome = start_run(RunOptions(suite=suite, agents=["oracle"], repeat=trials, jobs=jobs, out=out,
                                       executor=ExecutorOptions(executor)))
        wall, cpu, head = time.perf_counter() - t0, cpu_s() - c0, own_cpu_s() - h0
        bad = [r for r in outcome.results if r.end_state.value != "pass"]
        if len(outcome.results) != trials or bad:
            why = f"{bad[0].end_state.value}: {bad[0].reason}" if bad else f"{len(outcome.results)} of {trials} results"
            raise SystemExit(f"harness: a trial did not pass: {why}")
        return wall, cpu, head
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)


def marginal(suite: Path, trials: int, jobs: int, executor: str,
             cpu_s: Callable[[], float]) -> tuple[float, float, float]:
    """Milliseconds of wall time, of CPU and of the runner's own CPU that one more trial costs at ``jobs``."""
    small = campaign(suite, jobs, jobs, executor, cpu_s)
    big = campaign(suite, jobs + trials, jobs, executor, cpu_s)
    return tuple((b - s) * 1000 / trials for b, s in zip(big, small))  # type: ignore[return-value]


def executors() -> list[str]:
    """The executors to measure: the local one, and any named in ASSAY_BENCH_EXECUTORS."""
    return ["local", *[e for e in os.environ.get("ASSAY_BENCH_EXECUTORS", "").split(",") if e and e != "local"]]
