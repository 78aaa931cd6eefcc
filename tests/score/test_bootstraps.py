"""Several bootstraps at once (a comparison's metrics) give each the interval it gives alone: those
of one shape share their draws, and each is held, to the last digit, to the plain loop written out
here as the reference (a draw and a sum per unit, one generator per bootstrap), on both the loop's
and the bulk draws' paths."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.score import stats

CATS = ["code", "ops", "books", "security"]
_VALUES = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e-12, -3e9, 0, 1]),
                    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


def reference(deltas: dict[str, list[float]], weights: dict[str, float], resamples: int, seed: int,
              level: float = 0.95) -> tuple[float, float] | None:
    """The bootstrap as it was written before the draws were shared."""
    cats = {c: v for c, v in deltas.items() if v and weights.get(c, 0) > 0}
    if not cats:
        return None
    rng = random.Random(seed)
    out = []
    for _ in range(resamples):
        means = {c: sum(v[rng.randrange(len(v))] for _ in range(len(v))) / len(v) for c, v in cats.items()}
        m = stats.weighted_mean(means, weights)
        assert m is not None
        out.append(m)
    out.sort()
    alpha = (1 - level) / 2
    return stats.percentile(out, 100 * alpha), stats.percentile(out, 100 * (1 - alpha))  # type: ignore[return-value]


@st.composite
def metric_sets(draw: st.DrawFn) -> list[dict[str, list[float]]]:
    """Deltas of several metrics: many of one shape (as over the same units), some of others
    (a unit without a value, another category order, an empty or one-unit category)."""
    base = draw(st.dictionaries(st.sampled_from(CATS), st.integers(0, 12), min_size=1))
    out = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            sizes = base
        else:
            sizes = dict(reversed(list(base.items()))) if draw(st.booleans()) else {
                c: max(0, n - draw(st.integers(0, 1))) for c, n in base.items()}
        out.append({c: draw(st.lists(_VALUES, min_size=n, max_size=n)) for c, n in sizes.items()})
    return out


@pytest.mark.parametrize("bulk", [False, True])
@settings(max_examples=60, deadline=None)
@given(many=metric_sets(), seed=st.integers(0, 2**32), resamples=st.integers(1, 30),
       weights=st.fixed_dictionaries({c: st.sampled_from([0.0, 0.2, 1.0]) for c in CATS}))
def test_each_interval_is_what_it_gives_alone(many, seed, resamples, weights, bulk) -> None:  # noqa: ANN001
    if bulk:
        pytest.importorskip("numpy")
    original = stats.BULK_DRAWS
    stats.BULK_DRAWS = 0 if bulk else math.inf  # type: ignore[assignment]
    try:
        together = stats.paired_bootstraps(many, weights, resamples=resamples, seed=seed)
        alone = [stats.paired_bootstrap(d, weights, resamples=resamples, seed=seed) for d in many]
    finally:
        stats.BULK_DRAWS = original
    want = [reference(d, weights, resamples, seed) for d in many]
    assert repr(together) == repr(want) == repr(alone)  # repr: -0.0 and 0.0 stay apart


def test_one_shape_is_drawn_once(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[int] = []
    real = random.Random.randrange

    def counting(self: random.Random, n: int) -> int:
        drawn.append(n)
        return real(self, n)

    monkeypatch.setattr(random.Random, "randrange", counting)
    same = [{"code": [0.1 * i, 0.2, -0.3], "ops": [1.0, float(i)]} for i in range(5)]
    stats.paired_bootstraps(same, {"code": 0.5, "ops": 0.5}, resamples=10, seed=1)
    assert len(drawn) == 10 * (3 + 2)  # five metrics, one set of draws: ten resamples of five units
    drawn.clear()
    other = [{"code": [1.0, 2.0]}, {"ops": [1.0, 2.0, 3.0]}]
    stats.paired_bootstraps(other, {"code": 0.5, "ops": 0.5}, resamples=10, seed=1)
    assert len(drawn) == 10 * 2 + 10 * 3  # two shapes, each its own
