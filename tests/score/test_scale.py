"""The scorer at scale: the same figures as before to the last digit, pass^k / pass@k on a
bounded k grid (memory flat in the number of repetitions), and the fast fold paths exact."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from assay.score.aggregate import Aggregator, UnitAcc, category_metrics, unit_metrics
from assay.score.capability import DEFAULT_WEIGHTS
from assay.score.stats import k_grid, pass_k_curves, pass_k_points
from assay.score.trials import TraceFacts, TrialFacts

GOLDEN = Path(__file__).parent / "golden_aggregate.json"
CATS = {"code": 0.5, "ops": 0.3, "books": 0.2}
STATES = ["pass"] * 5 + ["fail"] * 2 + ["timeout", "infra_error", "skipped"]


def facts(seed: int, agents: int = 2, tasks: int = 8, max_reps: int = 6) -> list[TrialFacts]:
    """A varied, deterministic set of trials: every end state, retries, incidents, danger,
    attacks, injected faults, trace evidence or none, uneven repetitions."""
    rng = random.Random(seed)
    out = []
    cats = list(CATS)
    for a in range(agents):
        for t in range(tasks):
            for r in range(1, rng.randint(1, max_reps) + 1):
                state = rng.choice(STATES)
                trace = None if rng.random() < 0.3 else TraceFacts(
                    complete=rng.random() < 0.9, model_responses=rng.randint(0, 9), model_responses_with_usage=0,
                    tool_calls=rng.randint(0, 12), tool_calls_answered=rng.randint(0, 12), tool_results=rng.randint(0, 12),
                    tool_errors=rng.randint(0, 3), loops=rng.randint(0, 2), faults_injected=rng.randint(0, 1))
                if trace is not None:
                    trace.model_responses_with_usage = rng.randint(0, trace.model_responses)
                    trace.tool_errors = min(trace.tool_errors, trace.tool_results)
                attempts = rng.choice([1, 1, 1, 2, 3])
                danger = rng.choice([0] * 12 + [1])
                out.append(TrialFacts(
                    trial_id=f"t{t}.base.ag{a}.r{r}", task_id=f"t{t}", category=cats[t % 3], variant="base",
                    agent=f"ag{a}", repetition=r, end_state=state, reason=None, attempts=attempts,
                    infra_attempts=attempts - 1 + (state == "infra_error"), partial_attempts=rng.choice([0, 0, 1]),
                    strict_pass=state == "pass", safe_pass=state == "pass" or (danger == 0 and state != "infra_error"),
                    danger=danger, diagnostic=rng.uniform(0, 100), cost_usd=rng.uniform(0, 0.2),
                    tokens=rng.randint(0, 20000), tool_calls=rng.randint(0, 30), interventions=rng.randint(0, 2),
                    model_calls=rng.randint(0, 20), wall_s=rng.uniform(0.5, 400), trajectory_held=rng.randint(0, 2),
                    trajectory_total=rng.choice([0, 2, 3]), attack_injected=rng.random() < 0.2,
                    attack_succeeded=rng.random() < 0.3, artifacts_ok=rng.random() < 0.95,
                    cleanup_clean=rng.random() < 0.95, trace=trace,
                    incidents=[{"type": "secret_leak", "severity": rng.choice(["low", "high"])}] if rng.random() < 0.05 else []))
    return out


def aggregate(trials: list[TrialFacts], keep: bool = True) -> dict:
    agg = Aggregator(keep_trial_ids=keep)
    for t in trials:
        agg.add(t)
    return json.loads(json.dumps(agg.finish(CATS, dict(DEFAULT_WEIGHTS))))


def _drift(got: object, want: object, at: str = "") -> list[str]:
    """Where two documents differ: structure exactly, numbers beyond one unit of the 6th decimal."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            return [f"{at}: keys {sorted(set(got) ^ set(want))}"]
        return [d for k in want for d in _drift(got[k], want[k], f"{at}/{k}")]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{at}: length {len(got)} != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _drift(g, w, f"{at}/{i}")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return [] if abs(got - want) <= 1.000001e-6 else [f"{at}: {got} != {want}"]
    return [] if got == want else [f"{at}: {got!r} != {want!r}"]


def test_same_figures_as_the_previous_scorer_but_for_combining_unrounded() -> None:
    # golden_aggregate.json was written by main's scorer before the scale work (main at cbceb29)
    # from these very facts (seed 4 with up to 10 repetitions, all k kept). Scorer 1.1 combines
    # category figures unrounded, so a combined figure may move by one unit of its 6th decimal and
    # nothing else may move at all
    golden = json.loads(GOLDEN.read_text())
    assert set(golden) == {"1", "2", "3", "4"}
    moved = 0
    for seed, expected in golden.items():
        got = aggregate(facts(int(seed), max_reps=10 if seed == "4" else 6))
        assert _drift(got, expected) == [], f"seed {seed}"
        moved += got != expected
    assert moved, "the golden file no longer shows the rounding rule change: regenerate the test"


@pytest.mark.parametrize("n", [1, 2, 9, 10, 11, 20, 21, 57, 100, 333, 1000])
def test_pass_k_points_are_the_curve_at_the_grid(n: int) -> None:
    for c in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        hat_all, at_all = pass_k_curves(n, c)
        ks = k_grid(n)
        hat, at = pass_k_points(n, c, ks)
        assert hat == [hat_all[k - 1] for k in ks] and at == [at_all[k - 1] for k in ks]  # exact floats
    assert k_grid(n)[-1] == n and k_grid(n)[: min(n, 10)] == list(range(1, min(n, 10) + 1))


def test_k_grid_is_bounded() -> None:
    assert len(k_grid(10**6)) <= 10 + 3 * 6 + 1
    assert k_grid(0) == []


def test_many_repetitions_keep_a_bounded_k_grid_and_flat_memory() -> None:
    def peak(n: int) -> tuple[int, dict, dict]:
        units = [UnitAcc(category="code", n=n, passes=n * 7 // 10), UnitAcc(category="code", n=n + 3, passes=n // 2)]
        tracemalloc.start()
        row = unit_metrics(units[0])
        cat = category_metrics(units, [0.5, 0.6], weight=1.0, skipped=0)
        top = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return top, row, cat

    small, _, _ = peak(2_000)
    big, row, cat = peak(200_000)
    assert list(row["pass_at_k"]) == [str(k) for k in k_grid(200_000)]
    assert list(cat["pass_hat_k"]) == [str(k) for k in k_grid(200_000)]
    hat_all, _ = pass_k_curves(200_003, 100_001)
    assert cat["pass_hat_n"] == round((0.0 + hat_all[-1]) / 2, 6)  # pass^n still over each task's own n
    assert big < 2 * small  # 100x the repetitions, about the same memory (every k would be ~100x)


def test_trial_ids_kept_only_when_asked() -> None:
    trials = facts(3)
    with_ids, without = aggregate(trials, keep=True), aggregate(trials, keep=False)
    assert sum(len(r["trial_ids"]) for r in with_ids["tasks"]) == len(trials)
    assert all(r["trial_ids"] == [] for r in without["tasks"])
    for a, b in zip(with_ids["tasks"], without["tasks"]):
        assert {**a, "trial_ids": []} == b
