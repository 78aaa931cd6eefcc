"""The lean fold of one-attempt trials (``fold_one``, the scorer's hot path) gives the facts of the
reference fold (``fold_many``) to the last digit and bit, for either reader's record of every kind
of result content: predicates of every family, incidents, behaviour, attack and fault facts,
signed zeros and both end states that are never safe."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.score.trials import TraceFacts, fold_many, fold_one, fold_trial
from assay.store.fastread import FastResult, decode_result
from tests.score.synth import attempt
from tests.score.test_fastpath import STATES, extra, floats, incident, predicate

fault_extra = st.sampled_from([{"tool_fault_plan": [{"kind": "timeout"}], "tool_faults": [{"kind": "timeout"}]},
                               {"process_faults": [{"kind": "kill", "restart": True}], "duplicate_side_effects": 2}])


@st.composite
def one_attempt(draw: Any) -> dict[str, Any]:
    return {
        "state": draw(st.sampled_from(STATES)), "cost": draw(floats), "tokens": draw(st.integers(0, 10**6)),
        "tool_calls": draw(st.integers(0, 50)), "interventions": draw(st.integers(0, 3)),
        "wall": draw(floats | st.sampled_from([-1.0, -0.0])), "partial": draw(st.booleans()),
        "diagnostic": draw(st.floats(0, 100)), "predicates": draw(st.lists(predicate, max_size=3)),
        "incidents": draw(st.lists(incident, max_size=2)), "extra": draw(extra | fault_extra),
        "reason": draw(st.sampled_from([None, "timeout", "run_budget"])),
    }


def _records(a: dict[str, Any]) -> tuple[Any, Any]:
    r = attempt("t1", "code", "a", 2, a["state"], cost=a["cost"], tokens=a["tokens"], tool_calls=a["tool_calls"],
                interventions=a["interventions"], wall=a["wall"], partial=a["partial"], diagnostic=a["diagnostic"],
                predicates=a["predicates"], incidents=a["incidents"], extra=a["extra"], reason=a["reason"])
    fast = decode_result(r.model_dump_json().encode(), Path("result.json"))
    assert isinstance(fast, FastResult)
    return r, fast


@settings(max_examples=300, deadline=None)
@given(a=one_attempt(), artifacts_ok=st.booleans(), traced=st.booleans())
def test_fold_one_is_the_reference_fold(a: dict[str, Any], artifacts_ok: bool, traced: bool) -> None:
    trace = TraceFacts(complete=True, tool_calls=2) if traced else None
    for r in _records(a):
        ref = fold_many([r], artifacts_ok=artifacts_ok, trace=trace)
        lean = fold_one(r, artifacts_ok=artifacts_ok, trace=trace)
        assert repr(lean) == repr(ref)  # repr: -0.0 vs 0.0 and True vs 1 differ, where == would not
        assert repr(fold_trial([r], artifacts_ok=artifacts_ok, trace=trace)) == repr(ref)


def test_a_negative_zero_cost_folds_as_the_sum_did() -> None:
    r = attempt("t1", "code", "a", 1, "pass", cost=-0.0)
    assert repr(fold_one(r).cost_usd) == repr(fold_many([r]).cost_usd) == "0.0"


def test_several_attempts_still_take_the_reference_fold() -> None:
    rs = [attempt("t1", "code", "a", 1, "infra_error", attempt=2, cost=0.5),
          attempt("t1", "code", "a", 1, "pass", attempt=3, cost=0.25),
          attempt("t1", "code", "a", 1, "infra_error", attempt=1, cost=0.125)]
    t = fold_trial(rs)
    assert (t.attempts, t.infra_attempts, t.end_state, t.cost_usd) == (3, 2, "pass", 0.875)
    assert repr(t) == repr(fold_many(list(reversed(rs))))


def test_a_trajectory_kind_registered_late_is_seen(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The kind answers are kept per kind; a registration (or a change to the list) is seen at once."""
    from assay.score import trials

    monkeypatch.setattr(trials, "TRAJECTORY_KIND_PREFIXES", list(trials.TRAJECTORY_KIND_PREFIXES))
    assert trials.is_trajectory_kind("tool_call_count") and not trials.is_trajectory_kind("plugin_steps")
    trials.register_trajectory_kind("plugin")
    assert trials.is_trajectory_kind("plugin_steps") and trials.is_trajectory_kind("plugin.x")
    trials.TRAJECTORY_KIND_PREFIXES.remove("plugin")
    assert not trials.is_trajectory_kind("plugin_steps")
