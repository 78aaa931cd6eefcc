"""The run-wide budget end to end through the real CLI: the reference agent in bubblewrap, the
scripted model through the real gateway. It stops the run cleanly (the attempt in flight is
refused its next model call and says ``run_budget``, trials never started stay pending), exits
6, a resume with the same limit does nothing new and says so, a resume with a higher limit
finishes the run and `assay verify` passes; under ``--jobs 4`` the overshoot stays within the
bound the meter guarantees."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli.main import main
from assay.records.results import EndState
from assay.run import resume_run
from assay.run.budget_stop import spent_on_disk
from assay.run_budget.log import read_log
from assay.sandbox.registry import get_backend
from assay.score import score_run
from assay.spec.budget import BudgetName
from assay.spec.run_budget import RunBudget
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.conftest import assay_env, kill_runner_when
from tests.gateway.test_run_e2e import make_suite

pytestmark = pytest.mark.slow


def _sandbox() -> str:
    if not get_backend("bwrap").status().usable:
        pytest.skip("bubblewrap is not usable here")
    return "bwrap"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["run", *args, "--quiet"])
    cap = capsys.readouterr()
    return code, cap.out + cap.err


def _tokens(rd: RunDir) -> int:
    return sum(r.usage.input_tokens + r.usage.output_tokens for r in rd.results())


def _tree(path: Path) -> dict[str, bytes]:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file() and p.name != "runner.lock"}


def test_budget_stops_the_run_then_resume_with_a_higher_budget_completes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path / "suite")
    out = tmp_path / "run"
    # one token: the first model call is admitted (nothing spent yet) and crosses the limit
    code, text = _run(capsys, str(suite), "-a", "reference", "--model", "scripted", "--sandbox", _sandbox(),
                      "-n", "3", "--max-tokens", "1", "-o", str(out))
    assert code == 6, text
    assert "the run budget stopped the run" in text and f"--resume {out}" in text
    rd = RunDir.open(out)
    trials = rd.manifest().plan.trials
    assert rd.manifest().run_budget is not None and rd.manifest().run_budget.limits.max_tokens == 1

    # the attempt in flight: its second call refused by the gateway, recorded like an attempt budget
    [cut] = rd.results()
    assert (cut.end_state, cut.reason, cut.retryable) == (EndState.infra_error, "run_budget", True)
    assert cut.budget_exceeded is BudgetName.run_budget and "run_budget" in cut.limits_exceeded
    assert cut.usage.model_calls == 1
    refused = [e for e in read_events(rd.trace_path(cut.trial_id)) if e.kind is EventKind.budget_exceeded]
    assert refused and all(e.source is Source.gateway and e.data["budget"] == "run_budget"
                           and e.data["scope"] == "run" for e in refused)
    # the trials never started have no attempt at all: pending, not failed (the order is shuffled:
    # whichever trial went first is the cut one)
    assert [rd.attempts_of(t) for t in trials if t != cut.trial_id] == [[], []]
    [stop] = read_log(rd)
    assert stop["event"] == "stopped" and stop["pending"] == trials and stop["reached"] == "tokens"
    assert stop["spent"]["tokens"] == _tokens(rd)  # the meter's sum is the sum of the attempts' accounting

    doc = score_run(out)
    assert {t.trial_id: t.reason for t in doc.trials} == {trials[0]: "run_budget", trials[1]: "run_budget",
                                                          trials[2]: "run_budget"}
    assert not any(t.strict_pass for t in doc.trials)  # unknown is never a pass
    assert any(f.startswith("INCOMPLETE: the run budget stopped this run; 3 planned") for f in doc.measured.flags)

    # the same limit again: nothing starts, nothing is written, and it says so
    before = _tree(out)
    code, text = _run(capsys, "--resume", str(out), "--max-tokens", "1")
    assert code == 6 and "nothing new ran: the run budget was already reached" in text, text
    assert _tree(out) == before

    # a higher limit: the raise is recorded (the manifest stays as sealed) and the run completes
    manifest_bytes = (out / "manifest.json").read_bytes()
    code, text = _run(capsys, "--resume", str(out), "--max-tokens", "1000000")
    assert code == 0, text
    assert (out / "manifest.json").read_bytes() == manifest_bytes
    changed = read_log(rd)[-1]
    assert changed["event"] == "changed" and changed["from"]["max_tokens"] == 1 and changed["to"]["max_tokens"] == 1000000
    final = {r.trial_id: r for r in rd.results() if r.attempt == max(rd.attempts_of(r.trial_id))}
    assert sorted(final) == sorted(trials) and all(r.end_state is EndState.passed for r in final.values())
    assert [r.attempt for r in rd.results() if r.trial_id == cut.trial_id] == [1, 2]  # the cut attempt is kept
    assert rd.result(cut.trial_id, 2).retry_reason == "run_budget"
    assert main(["verify", str(out)]) == 0
    assert not any(f.startswith("INCOMPLETE") for f in score_run(out).measured.flags)


def test_concurrent_attempts_overshoot_at_most_the_calls_in_flight(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Bound: spent < limit + (calls in flight when the limit was crossed) x (dearest call), and
    with one call at a time per attempt those are at most --jobs calls."""
    # every call answered late (a slow model), so the attempts' calls overlap when the limit falls
    suite = make_suite(tmp_path / "suite", faults=[{"kind": "latency", "on_call": 1, "times": 3, "delay_s": 0.3}])
    out = tmp_path / "run"
    jobs, limit = 4, 1500  # each trial makes three calls of a few hundred tokens: the limit falls mid-run
    code, text = _run(capsys, str(suite), "-a", "reference", "--model", "scripted", "--sandbox", _sandbox(),
                      "-n", "8", "-j", str(jobs), "--max-tokens", str(limit), "-o", str(out))
    assert code == 6, text
    rd = RunDir.open(out)
    [stop] = read_log(rd)
    spent = _tokens(rd)
    assert stop["spent"]["tokens"] == spent >= limit  # every call charged once, by every attempt together
    assert 1 <= stop["crossing_in_flight"] <= jobs
    assert spent < limit + stop["crossing_in_flight"] * stop["dearest_call"]["tokens"]
    assert spent < limit + jobs * stop["dearest_call"]["tokens"]
    results = rd.results()
    cut = [r for r in results if r.reason == "run_budget"]
    assert stop["pending"] and set(stop["pending"]) >= {r.trial_id for r in cut}
    for r in results:  # an attempt that ran past the crossing was refused by the gateway, nothing else
        refused = [e for e in read_events(rd.trace_path(r.trial_id), attempt=r.attempt)
                   if e.kind is EventKind.budget_exceeded]
        assert bool(refused) == (r.budget_exceeded is BudgetName.run_budget)
    started = {r.trial_id for r in results}
    never = [t for t in rd.manifest().plan.trials if t not in started]
    assert all(rd.attempts_of(t) == [] for t in never)
    assert set(stop["pending"]) == set(never) | {r.trial_id for r in cut}


@pytest.mark.parametrize("args,why", [
    (["--max-cost", "-1"], "--max-cost -1: must be a positive"),
    (["--max-cost", "0"], "--max-cost 0: must be a positive"),
    (["--max-cost", "nan"], "--max-cost nan: must be a positive, finite"),
    (["--max-cost", "abc"], "Invalid value for '--max-cost'"),
    (["--max-tokens", "0"], "--max-tokens 0: must be at least 1"),
    (["--max-tokens", "1.5"], "Invalid value for '--max-tokens'"),
])
def test_bad_values_exit_2_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            args: list[str], why: str) -> None:
    suite = make_suite(tmp_path / "suite")
    out = tmp_path / "run"
    code, text = _run(capsys, str(suite), "-a", "reference", "--model", "scripted", "--sandbox", "host",
                      *args, "-o", str(out))
    assert code == 2 and why in " ".join(text.split()), text
    assert "Traceback" not in text and not out.exists()


def test_a_budget_that_cannot_bind_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path / "suite")
    out = tmp_path / "run"
    code, text = _run(capsys, str(suite), "-a", "oracle", "--sandbox", "host", "--max-tokens", "10", "-o", str(out))
    assert code == 2 and "pass --model too" in text and not out.exists()
    # an upstream without a price: every call would cost 0, a cost limit could never bind
    code, text = _run(capsys, str(suite), "-a", "reference", "--model", "upstream:http://127.0.0.1:9/v1#m",
                      "--sandbox", "host", "--max-cost", "1", "-o", str(out))
    assert code == 2 and "--max-cost needs a price for the model m" in " ".join(text.split()) and not out.exists()


def test_bad_value_on_resume_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path / "suite")
    out = tmp_path / "run"
    code, _ = _run(capsys, str(suite), "-a", "reference", "--model", "scripted", "--sandbox", "host",
                   "--max-tokens", "1", "-o", str(out))
    assert code == 6
    before = _tree(out)
    code, text = _run(capsys, "--resume", str(out), "--max-cost", "-1")
    assert code == 2 and "--max-cost -1" in text and _tree(out) == before
    # a cost limit on resume keeps the token limit in force: still spent, nothing starts or is written
    code, text = _run(capsys, "--resume", str(out), "--max-cost", "100")
    assert code == 6 and "nothing new ran" in text
    [stop, changed] = read_log(RunDir.open(out))
    assert changed["to"] == {"max_cost_usd": 100.0, "max_tokens": 1} and changed["from"]["max_tokens"] == 1
    assert [p for p in _tree(out) if p not in before] == ["budget/0002-changed.json"]


def test_estimate_is_bound_into_the_manifest_and_printed_before_the_run(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path / "suite", budget={"tokens": 4000})
    prices = tmp_path / "prices.yaml"
    prices.write_text(json.dumps({"assay-scripted": {"input": 10.0, "output": 30.0}}))
    out = tmp_path / "run"
    code = main(["run", str(suite), "-a", "reference,oracle", "--model", "scripted", "--sandbox", "host", "-n", "2",
                 "--prices", str(prices), "--max-cost", "0.05", "-o", str(out)])
    text = " ".join(capsys.readouterr().err.split())
    est = RunDir.open(out).manifest().run_budget.estimate
    # two reference trials call the model (the oracle does not): 2 x 4000 tokens at the dearest $30/M
    assert (est.trials, est.tokens, est.cost_usd) == (2, 8000, pytest.approx(0.24))
    assert "worst case by the task budgets and the price table: $0.24, 8000 tokens" in text
    assert "WARNING the worst case may not fit the run budget (worst-case cost $0.24 > $0.05)" in text
    assert code in (0, 6)  # the run itself went ahead: the estimate warns, the meter stops


def test_spend_of_attempts_a_killed_runner_left_counts_on_resume(tmp_path: Path) -> None:
    """kill -9 while model calls are in flight: the calls those attempts already made are in
    their gateway recordings, and the resumed run's meter starts from them too."""
    suite = make_suite(tmp_path / "suite", faults=[{"kind": "latency", "on_call": 2, "times": 2, "delay_s": 1.0}])
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(suite), "-a", "reference", "--model",
                             "scripted", "--sandbox", "host", "-n", "6", "-j", "2", "--max-tokens", "10000000",
                             "-o", str(out), "-q"], env=assay_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def recorded(attempt: Path) -> bool:
        rec = attempt / "gateway.session.jsonl"
        return rec.is_file() and rec.read_bytes().endswith(b"\n")

    def caught_mid_call() -> bool:  # an attempt with a whole recorded call and no result yet
        return any(recorded(p.parent) and not (p.parent / "result.json").exists()
                   for p in out.glob("trials/*/attempts/*/started.json"))

    kill_runner_when(proc, caught_mid_call, "no attempt was ever caught between two model calls")
    rd = RunDir.open(out)
    manifest = rd.manifest()
    finished = _tokens(rd)
    cost, tokens = spent_on_disk(rd, manifest, {"reference"})
    assert tokens > finished  # the interrupted attempts' calls are counted, not only the results'
    before = {(r.trial_id, r.attempt) for r in rd.results()}

    # with the limit at what was really spent, the resumed run starts nothing (the meter agrees)
    resumed = resume_run(out, run_budget=RunBudget(max_tokens=tokens))
    assert resumed.budget is not None and resumed.budget.reached_at_start and resumed.budget.spend.tokens == tokens
    assert all(r.reason == "interrupted" for r in resumed.results if r.partial)
    assert {(r.trial_id, r.attempt) for r in resumed.results if not r.partial} == before  # no new attempt ran
