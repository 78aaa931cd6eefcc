"""Fair scheduling: the trial order is shuffled with a recorded seed (a resume keeps it), and
attempts in flight are bounded per agent and per upstream model."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.run import RunOptions, resume_run, start_run
from assay.run.hooks import hookimpl
from assay.run.plan import PlannedTrial, build_plan
from assay.run.schedule import ExecutorOptions, Limiter, shuffled
from assay.spec.load import load_suite
from tests.conftest import ROOT, assay_env


class Order:
    def __init__(self) -> None:
        self.started: list[str] = []

    @hookimpl
    def assay_attempt_started(self, trial_id: str) -> None:
        self.started.append(trial_id)


def test_order_is_shuffled_by_the_recorded_seed_and_a_resume_keeps_it(calc_suite: Path, tmp_path: Path) -> None:
    plan = build_plan(load_suite(calc_suite), ["oracle", "nop"], repeat=4)
    matrix, expected = [t.id for t in plan], [t.id for t in shuffled(plan, 11)]
    assert expected != matrix and sorted(expected) == sorted(matrix)
    run_dir = tmp_path / "r"
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(calc_suite), "--agent", "oracle,nop",
                             "-n", "4", "--seed", "11", "--sandbox", "host", "--out", str(run_dir), "-q"],
                            env=assay_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    end = time.monotonic() + 120
    while len(list(run_dir.glob("trials/*/attempts/*/result.json"))) < 3:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < end, "run made no progress"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # the runner dies mid-campaign
    proc.wait()
    markers = sorted(run_dir.glob("trials/*/attempts/*/started.json"), key=lambda p: json.loads(p.read_text())["ts"])
    before = [p.parts[-4] for p in markers]
    assert 3 <= len(before) < len(expected)
    rest = Order()
    out = resume_run(run_dir, plugins=[rest])
    assert list(dict.fromkeys(before + rest.started)) == expected  # the whole campaign in the seed's order
    assert out.manifest.plan.seed == 11
    assert out.manifest.plan.trials == matrix  # the plan itself stays in matrix order (reports read it)


def test_a_run_without_seed_records_the_one_it_drew(calc_suite: Path, tmp_path: Path) -> None:
    out = start_run(RunOptions(suite=calc_suite, agents=["oracle"], repeat=2, out=tmp_path / "r", sandbox="host",
                               max_per_agent=1, max_per_model=2))
    p = out.manifest.plan
    assert isinstance(p.seed, int) and (p.max_per_agent, p.max_per_model, p.executor) == (1, 2, "local")


@pytest.mark.parametrize("bad", [{"max_per_agent": 0}, {"max_per_model": -1}, {"deadline_s": 0}])
def test_bad_bounds_are_refused_before_anything_is_written(calc_suite: Path, tmp_path: Path, bad: dict) -> None:
    with pytest.raises(UsageError):
        start_run(RunOptions(suite=calc_suite, agents=["oracle"], out=tmp_path / "r", **bad))
    assert not (tmp_path / "r").exists()


def test_executor_options_refuse_unknown_and_misplaced_values() -> None:
    with pytest.raises(UsageError, match="--executor"):
        ExecutorOptions("dask")
    with pytest.raises(UsageError, match="--address"):
        ExecutorOptions("local", "auto")


async def _peak(limiter: Limiter, trials: list[PlannedTrial], uses_model: dict[str, bool]) -> dict[str, int]:
    """Hold every slot until all trials that can run at once are in; the peaks per key."""
    now: dict[str, int] = {}
    peak: dict[str, int] = {}
    gate = asyncio.Event()

    async def one(t: PlannedTrial) -> None:
        async with limiter.slot(t, uses_model=uses_model[t.agent]):
            for k in (t.agent, "model" if uses_model[t.agent] else "none", "total"):
                now[k] = now.get(k, 0) + 1
                peak[k] = max(peak.get(k, 0), now[k])
            await gate.wait()
            for k in (t.agent, "model" if uses_model[t.agent] else "none", "total"):
                now[k] -= 1

    tasks = [asyncio.create_task(one(t)) for t in trials]
    for _ in range(50):  # let every task that can take a slot take it
        await asyncio.sleep(0)
    gate.set()
    await asyncio.gather(*tasks)
    return peak


def test_limiter_bounds_each_agent_and_the_model_users() -> None:
    trials = [PlannedTrial("t", "base", a, r) for a in ("a", "b", "c") for r in range(1, 5)]
    uses = {"a": True, "b": True, "c": False}
    peak = asyncio.run(_peak(Limiter(8, per_agent=2, per_model=3, model="m"), trials, uses))
    assert peak["a"] <= 2 and peak["b"] <= 2 and peak["c"] == 2  # each agent bounded, and reaching it
    assert peak["model"] == 3  # a and b together use the model: at most 3, and 3 reached
    assert peak["total"] == 5  # c's two do not count against the model
    peak = asyncio.run(_peak(Limiter(3), trials, uses))
    assert peak["total"] == 3


def test_a_plain_run_never_imports_ray(calc_suite: Path, tmp_path: Path) -> None:
    code = ("import sys\nfrom pathlib import Path\nfrom assay.run import RunOptions, start_run\n"
            f"start_run(RunOptions(suite=Path({str(calc_suite)!r}), agents=['oracle'], out=Path({str(tmp_path / 'r')!r}), "
            "sandbox='host'))\nprint('ray' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=assay_env(), cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"
