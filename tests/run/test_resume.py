"""Resume after kill -9: the plan finishes with every trial scored exactly once, nothing lost,
interrupted attempts kept and marked. Concurrency does not change results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from assay.records.results import EndState
from assay.run import RunOptions, resume_run, start_run
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import assay_env, kill_runner_when, write_agent, write_suite, write_task


def count_results(run_dir: Path) -> int:
    return len(list((run_dir / "trials").glob("*/attempts/*/result.json"))) if (run_dir / "trials").exists() else 0


def test_kill_9_mid_run_then_resume_scores_each_planned_trial_once(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": 30},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    agent = write_agent(tmp_path / "slow.yaml", "slow", "import time\ntime.sleep(0.25)\nopen('out.txt','w').write('done')\n")
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", str(agent), "-n", "100",
                             "-j", "3", "--sandbox", "host", "--out", str(run_dir), "-q"],
                            env=assay_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    kill_runner_when(proc, lambda: count_results(run_dir) >= 30, "run made no progress")
    rd = RunDir.open(run_dir)
    plan = rd.manifest().plan.trials
    assert len(plan) == 100
    in_flight = {(p.parts[-4], int(p.parts[-2])) for p in run_dir.glob("trials/*/attempts/*/started.json")
                 if not (p.parent / "result.json").exists()}
    done_before = {r.trial_id: r for r in rd.results()}
    assert 30 <= len(done_before) < 100

    resumed = resume_run(run_dir)
    results = resumed.results
    by_trial: dict[str, list] = {}
    for r in results:
        by_trial.setdefault(r.trial_id, []).append(r)
    assert sorted(by_trial) == sorted(plan)  # none lost, none extra
    for tid, attempts in by_trial.items():
        finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
        assert len(finals) == 1, (tid, attempts)  # scored exactly once
        assert finals[0].end_state is EndState.passed
        assert finals[0] is attempts[-1]
    partial = {(r.trial_id, r.attempt) for r in results if r.partial}
    assert partial == in_flight
    assert all(r.reason == "interrupted" for r in results if r.partial)
    for tid, r in done_before.items():  # finished trials were not run again
        assert [a.attempt for a in by_trial[tid]] == [r.attempt]
    assert verify_run(run_dir).ok

    again = resume_run(run_dir)  # resuming a finished run does nothing
    assert len(again.results) == len(results)


def normalized(results: list) -> list:
    out = []
    for r in results:
        preds = [(p.id, p.passed, {k: v for k, v in p.evidence.items() if k not in ("output",)}) for p in r.predicates]
        out.append((r.trial_id, r.attempt, r.end_state, r.reason, r.diagnostic_score, r.agent_exit_code, preds,
                    sorted(r.artifacts), r.incidents))
    return sorted(out, key=lambda x: (x[0], x[1]))


def test_jobs_do_not_change_results(calc_suite: Path, tmp_path: Path) -> None:
    one = start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], repeat=3, jobs=1, out=tmp_path / "a",
                               sandbox="host")).results
    four = start_run(RunOptions(suite=calc_suite, agents=["oracle", "nop"], repeat=3, jobs=4, out=tmp_path / "b",
                                sandbox="host")).results
    assert len(one) == 6
    assert normalized(one) == normalized(four)


def test_resume_refuses_changed_suite(calc_suite: Path, tmp_path: Path) -> None:
    import pytest

    from assay.errors import RunDirError

    start_run(RunOptions(suite=calc_suite, agents=["nop"], out=tmp_path / "run", sandbox="host"))
    (calc_suite / "tasks/calc/hidden/tests/test_calc.py").write_text("def test_x():\n    pass\n")
    with pytest.raises(RunDirError, match="changed since this run started"):
        resume_run(tmp_path / "run")
