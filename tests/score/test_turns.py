"""Per-turn verdicts of conversation tasks and their pass^k, checked by brute force over subsets."""

from __future__ import annotations

import itertools
import math

from assay.records.results import AttemptResult, EndState, PredicateResult, Timings
from assay.score.aggregate import Aggregator
from assay.score.trials import fold_trial, turn_verdicts


def _result(rep: int, turns: dict[int, bool], state: EndState = EndState.failed, final: bool = True) -> AttemptResult:
    preds = [PredicateResult(id="final", kind="world_sql", required=True, weight=1, passed=final)]
    for n, ok in turns.items():
        preds.append(PredicateResult(id=f"t{n}", kind="world_diff", required=True, weight=1, passed=ok, turn=n))
        preds.append(PredicateResult(id=f"t{n}-soft", kind="world_diff", required=False, weight=1, passed=False, turn=n))
    held = all(p.passed for p in preds if p.required)
    return AttemptResult(run_id="r", trial_id=f"conv.base.a.r{rep}", task_id="conv", category="c", variant="base",
                         agent="a", repetition=rep, attempt=1, end_state=EndState.passed if held else state,
                         predicates_held=held, predicates=preds, timings=Timings(started_at=0, ended_at=1))


def test_a_turn_holds_when_its_required_predicates_hold() -> None:
    assert turn_verdicts(_result(1, {1: True, 2: False, 3: True})) == {1: True, 2: False, 3: True}
    assert turn_verdicts(_result(1, {})) is None  # not a conversation with per-turn checks


def test_an_attempt_without_a_verdict_passes_no_turn() -> None:
    r = _result(1, {1: True}).model_copy(update={"end_state": EndState.infra_error})
    assert turn_verdicts(r) == {1: False}


def _brute_pass_hat(outcomes: list[bool], k: int) -> float:
    subsets = list(itertools.combinations(outcomes, k))
    return sum(all(s) for s in subsets) / len(subsets)


def test_turn_pass_hat_k_matches_brute_force_and_differs_from_the_tasks() -> None:
    pattern = [{1: True, 2: True}, {1: True, 2: False}, {1: True, 2: True}, {1: False, 2: True}, {1: True, 2: True}]
    agg = Aggregator()
    for rep, turns in enumerate(pattern, start=1):
        agg.add(fold_trial([_result(rep, turns)]))
    body = agg.finish({"c": 1.0}, {})
    [unit] = body["tasks"]
    for turn in (1, 2):
        outcomes = [p[turn] for p in pattern]
        got = unit["turns"][str(turn)]
        assert got["n"] == 5 and got["passes"] == sum(outcomes)
        for k in range(1, 6):
            assert math.isclose(got["pass_hat_k"][str(k)], _brute_pass_hat(outcomes, k), abs_tol=1e-6)
    # the whole conversation passes only when every turn did: pass^k of the task is lower than either turn's
    assert unit["passes"] == 3 and unit["pass_hat_k"]["2"] < unit["turns"]["1"]["pass_hat_k"]["2"]
