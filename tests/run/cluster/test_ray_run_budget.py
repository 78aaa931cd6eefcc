"""The run-wide budget on a real local Ray cluster: attempts on two worker nodes call a real
upstream on loopback through the head's one gateway, whose one meter admits every node's calls.
The budget crossed mid-run stops the campaign like a local run (exit 6, the same ``stopped``
record, attempts cut with ``run_budget``, trials never started left pending); a resume with a
higher limit finishes it; what the run says it spent is what the upstream reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.records.results import EndState
from assay.run_budget.log import read_log
from assay.spec.budget import BudgetName
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.gateway.fake_upstream import Upstream
from tests.gateway.test_run_e2e import make_suite
from tests.run.cluster.cluster import LocalRayCluster
from tests.run.cluster.test_ray_executor import assay

pytestmark = pytest.mark.timeout(900)


def _tokens(rd: RunDir) -> int:
    return sum(r.usage.input_tokens + r.usage.output_tokens for r in rd.results())


def test_run_budget_crossed_on_two_nodes_stops_then_resume_completes(cluster: LocalRayCluster, runs: Path,
                                                                     tmp_path: Path) -> None:
    up = Upstream(text="I will leave calc.py as it is.").start()
    try:
        suite = make_suite(tmp_path / "suite")
        run_dir = runs / "budget"
        on_ray = ["--executor", "ray", "--address", cluster.address]
        out = assay("run", str(suite), "-a", "reference", "--model", f"upstream:{up.url}/v1#up-model", "-n", "6",
                    "-j", "4", "--max-tokens", "1", *on_ray, "--out", str(run_dir), "-q", cwd=tmp_path)
        assert out.returncode == 6, out.stderr[-3000:]
        assert "the run budget stopped the run" in out.stderr + out.stdout
        rd = RunDir.open(run_dir)
        trials = rd.manifest().plan.trials
        results = rd.results()
        # the first four trials started at once, two on each worker node; the others never started
        seen = [(r.trial_id, r.attempt, r.end_state.value, r.reason, r.extra.get("gateway_calls"),
                 round(r.timings.started_at - min(x.timings.started_at for x in results), 2), r.errors[:2]) for r in results]
        assert len(results) == 4 and len({r.sandbox["node_id"] for r in results}) == 2, seen
        never = [t for t in trials if rd.attempts_of(t) == []]
        assert len(never) == 2
        [stop] = read_log(rd)
        assert stop["event"] == "stopped" and stop["reached"] == "tokens"
        # one meter for every node: its sum is the attempts' accounting and the upstream's own usage
        assert stop["spent"]["tokens"] == _tokens(rd) == up.usage_input + up.usage_output > 1
        assert stop["calls"] == up.answered
        assert stop["spent"]["tokens"] < 1 + stop["crossing_in_flight"] * stop["dearest_call"]["tokens"]
        cut = [r for r in results if r.reason == "run_budget"]
        for r in results:  # a call after the crossing, from either node, was refused by the head's gateway
            refused = [e for e in read_events(rd.trace_path(r.trial_id), attempt=r.attempt)
                       if e.kind is EventKind.budget_exceeded]
            assert bool(refused) == (r.budget_exceeded is BudgetName.run_budget) == (r in cut)
            assert all(e.source is Source.gateway and e.data["scope"] == "run" for e in refused)
            if r in cut:
                assert (r.end_state, r.retryable) == (EndState.infra_error, True)
        assert up.requests == up.answered  # a refused call never reached the upstream
        assert set(stop["pending"]) == set(never) | {r.trial_id for r in cut}
        assert verify_run(run_dir).ok

        # the same limit: nothing new starts on any node
        again = assay("run", "--resume", str(run_dir), "--max-tokens", "1", *on_ray, "-q", cwd=tmp_path)
        assert again.returncode == 6 and "nothing new ran" in again.stderr + again.stdout, again.stderr[-2000:]
        assert len(rd.results()) == 4 and up.requests == stop["calls"]

        done = assay("run", "--resume", str(run_dir), "--max-tokens", "1000000", *on_ray, "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
        assert [e["event"] for e in read_log(rd)] == ["stopped", "changed"]
        for tid in trials:  # every planned trial ended exactly once; the cut attempts are kept
            attempts = [r for r in rd.results() if r.trial_id == tid]
            finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
            assert len(finals) == 1 and finals[0] is attempts[-1], attempts
        for r in cut:
            assert rd.result(r.trial_id, 2).retry_reason == "run_budget"
        assert _tokens(rd) == up.usage_input + up.usage_output  # both sessions: every call charged once
        assert verify_run(run_dir).ok
        v = assay("verify", str(run_dir), cwd=tmp_path)
        assert v.returncode == 0, v.stdout + v.stderr
    finally:
        up.stop()
