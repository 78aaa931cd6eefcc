"""The run budget meters the judge model's own calls: a run with ``--judge-model`` and a run budget
counts every judge call against the limit, refuses the judge once it is reached (the judged
attempt then ends ``infra_error`` / ``run_budget``, never a verdict), records what the judge spent
in the run's budget log, and a resume starts its meter from it. An agent the run budget cannot
meter (its model calls bypass the gateway) is refused before anything is written, and so is a
cost limit when the judge model has no price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.records.results import EndState
from assay.run import resume_run
from assay.run.runner import RunOptions, start_run
from assay.run_budget.log import read_log
from assay.run_budget.meter import describe_estimate
from assay.spec.run_budget import RunBudget
from assay.store.integrity import verify_run
from tests.conftest import write_agent
from tests.judge.test_calibrate import faithful
from tests.judge.test_judge_run import judged_suite

TOKENS_PER_JUDGE_CALL = 57  # what the fake judge reports: 50 in, 7 out


def test_the_judge_is_metered_refused_and_resumed_by_the_run_budget(tmp_path: Path, fake_judge) -> None:
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    before = fj.calls
    # 50 tokens: the first judge call is admitted (nothing spent) and crosses the limit; the second
    # (the swapped order of the same pairwise verdict) is refused
    out = start_run(RunOptions(suite=suite, agents=["oracle"], out=tmp_path / "run", judge_model=fj.model_arg,
                               repeat=3, jobs=1, run_budget=RunBudget(max_tokens=50)))
    assert fj.calls - before == 1
    estimate = out.manifest.run_budget.estimate  # type: ignore[union-attr]
    assert estimate.judged_trials == 3 and estimate.trials == 0  # oracle calls no model: only the judge does
    assert any("judge model's calls (3 judged trial(s))" in line
               for line in describe_estimate(estimate, RunBudget(max_tokens=50)))
    [cut] = out.results
    assert (cut.end_state, cut.reason, cut.retryable) == (EndState.infra_error, "run_budget", True)
    assert any("run's budget refused the judge" in e for e in cut.errors), cut.errors
    assert out.budget is not None and out.budget.stopped and len(out.budget.pending) == 3
    assert (out.budget.spend.tokens, out.budget.spend.refused) == (TOKENS_PER_JUDGE_CALL, 1)
    log = read_log(out.run_dir)
    [judge] = [e for e in log if e["event"] == "judge"]
    assert (judge["calls"], judge["tokens"]) == (1, TOKENS_PER_JUDGE_CALL)
    assert [e["event"] for e in log][-1] == "stopped"

    # a resume with room for every judge call: the cut attempt is run again (no retry used up) and
    # the meter starts from what the judge spent before, which no attempt holds
    again = resume_run(tmp_path / "run", run_budget=RunBudget(max_tokens=10_000))
    assert fj.calls - before == 1 + 3 * 2
    finals = {r.trial_id: r for r in again.results}
    assert len(finals) == 3 and all(r.end_state is EndState.passed for r in finals.values())
    assert again.budget is not None and not again.budget.stopped
    assert again.budget.spend.tokens == TOKENS_PER_JUDGE_CALL * (1 + 6)
    judged = [e for e in read_log(again.run_dir) if e["event"] == "judge"]
    assert [(e["calls"], e["tokens"]) for e in judged] == [(1, 57), (6, 6 * 57)]
    assert verify_run(again.run_dir.path).problems == []  # the judge records are sealed evidence


def test_a_cost_limit_needs_the_judge_models_price(tmp_path: Path, fake_judge) -> None:
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    with pytest.raises(UsageError, match="price for the judge model judge-model"):
        start_run(RunOptions(suite=suite, agents=["oracle"], out=tmp_path / "run", judge_model=fj.model_arg,
                             run_budget=RunBudget(max_cost_usd=1.0)))
    assert not (tmp_path / "run").exists()


def test_a_cost_limit_meters_a_priced_judge(tmp_path: Path, fake_judge, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"judge-model": {"input": 1000.0, "output": 1000.0}}))  # 57 tokens: $0.057
    monkeypatch.setenv("ASSAY_GATEWAY_PRICES", str(prices))
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    out = start_run(RunOptions(suite=suite, agents=["oracle"], out=tmp_path / "run", judge_model=fj.model_arg,
                               repeat=2, jobs=1, run_budget=RunBudget(max_cost_usd=0.1)))
    # 0.057 after the first call, 0.114 after the second: the first verdict completes, then the run stops
    assert out.budget is not None and out.budget.stopped
    assert out.budget.spend.cost_usd == pytest.approx(2 * 57 * 1000 / 1e6)
    assert [r.end_state for r in out.results] == [EndState.passed]


def test_an_agent_the_run_budget_cannot_meter_is_refused(tmp_path: Path, fake_judge) -> None:
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    own_key = write_agent(tmp_path / "own-key.yaml", "own-key", "print('I call my model myself')\n")
    with pytest.raises(UsageError, match=r"agent\(s\) \['own-key'\] do not use it.*needs_gateway: true"):
        start_run(RunOptions(suite=suite, agents=["oracle", str(own_key)], out=tmp_path / "run",
                             judge_model=fj.model_arg, run_budget=RunBudget(max_tokens=10_000)))
    assert not (tmp_path / "run").exists()
    # without a run budget the same run is accepted: nothing is claimed about what it spends
    out = start_run(RunOptions(suite=suite, agents=[str(own_key)], out=tmp_path / "free", judge_model=fj.model_arg))
    assert out.budget is None and len(out.results) == 1
