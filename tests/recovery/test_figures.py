"""Recovery figures on hand-written results: what counts as faulted, exercised, recovered,
paired and unclassified."""

from __future__ import annotations

import pytest

from assay.records.results import AttemptResult, EndState, Timings, UsageTotals
from assay.score.recovery_run import recovery_figures

PLAN = [{"kind": "error", "tool": "ledger.record_entry"}]


def _r(variant: str, rep: int, state: str, *, fired: bool = True, planned: bool = True, cost: float = 0.01,
       agent_s: float = 1.0, dups: int = 0, attempt: int = 1) -> AttemptResult:
    extra = {"duplicate_side_effects": dups}
    if planned and variant != "base":
        extra |= {"tool_fault_plan": PLAN, "tool_faults": [{"kind": "error"}] if fired else []}
    return AttemptResult(run_id="r", trial_id=f"t.{variant}.a.r{rep}", task_id="t", category="c", variant=variant,
                         agent="a", repetition=rep, attempt=attempt, end_state=EndState(state),
                         timings=Timings(started_at=0, ended_at=agent_s + 1, agent_s=agent_s),
                         usage=UsageTotals(cost_usd=cost, tool_calls=2), extra=extra)


def test_counts_pairs_and_fail_closed():
    results = [
        _r("base", 1, "pass", cost=0.01, agent_s=1.0), _r("base", 2, "pass", cost=0.01, agent_s=1.0),
        _r("base", 3, "infra_error"),
        _r("f", 1, "pass", cost=0.03, agent_s=2.0),
        _r("f", 2, "fail", cost=0.02, agent_s=4.0, dups=1),
        _r("f", 3, "pass", cost=0.05),              # its base has no verdict: counted, never paired
        _r("f", 4, "pass", fired=False),            # the fault never fired: not exercised
        _r("g", 1, "infra_error", planned=False),   # no record of a plan: unclassified
        _r("h", 1, "infra_error", attempt=1), _r("h", 1, "pass", attempt=2, cost=0.02),  # retried: final attempt
    ]
    fig = recovery_figures(results, resamples=200)
    row = fig.row("a")
    assert (row.faulted, row.recovered, row.not_exercised, row.duplicates) == (4, 3, 1, 1)
    assert row.interval == pytest.approx((0.3006, 0.9544), abs=1e-3)
    assert row.pairs == 3  # f.r1, f.r2 and h.r1 (base r1); f.r3's base is an infra error
    assert row.extra_cost_usd == pytest.approx(((0.03 - 0.01) + (0.02 - 0.01) + (0.01 + 0.02 - 0.01)) / 3)
    assert row.extra_wall_s == pytest.approx(((2.0 - 1.0) + (4.0 - 1.0) + (1.0 - 1.0)) / 3)
    assert fig.unclassified == 1
    assert fig.row("a", "error").faulted == 4


def test_no_fault_plan_no_rows():
    fig = recovery_figures([_r("base", 1, "pass")])
    assert fig.rows == [] and fig.unclassified == 0
