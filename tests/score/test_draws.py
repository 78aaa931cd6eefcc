"""The bootstrap's indices drawn in bulk (score/draws.py) are ``randrange``'s, in the same order,
so every interval is what the plain loop gives: the draws themselves, whole bootstraps over hostile
deltas, and the fallback to the loop wherever the bulk stream could differ or numpy is missing."""

from __future__ import annotations

import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.score import draws, stats

np = pytest.importorskip("numpy")


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**64), calls=st.lists(st.tuples(
    st.one_of(st.integers(1, 70), st.integers(1, 2**32 - 1), st.sampled_from([2**k + 1 for k in range(31)])),
    st.integers(0, 400)), min_size=1, max_size=8))
def test_bulk_draws_are_randranges_in_order(seed: int, calls: list[tuple[int, int]]) -> None:
    ref, fast = random.Random(seed), draws.RandBelow(random.Random(seed), np)
    for n, count in calls:  # n changes from call to call, as over a bootstrap's categories
        assert fast.take(n, count) == [ref.randrange(n) for _ in range(count)]


def test_a_stream_longer_than_one_chunk_stays_in_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draws, "CHUNK", 64)  # every take crosses the generator's chunks
    ref, fast = random.Random(3), draws.RandBelow(random.Random(3), np)
    for n in (5, 2**20 + 1, 1000, 3):
        assert fast.take(n, 500) == [ref.randrange(n) for _ in range(500)]


def test_sizes_past_one_word_are_refused() -> None:
    fast = draws.RandBelow(random.Random(0), np)
    for n in (0, 2**32):
        with pytest.raises(ValueError, match="2\\*\\*32"):
            fast.take(n, 1)


_VALUES = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 1e-12, -3e9, 0, 1, -1]),
                    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))


@settings(max_examples=60, deadline=None)
@given(deltas=st.dictionaries(st.sampled_from(["code", "ops", "books", "security"]), st.lists(_VALUES, max_size=60),
                              min_size=1),
       weights=st.fixed_dictionaries({c: st.sampled_from([0.0, 0.1, 0.3, 1.0]) for c in ("code", "ops", "books",
                                                                                        "security")}),
       seed=st.integers(0, 2**32), resamples=st.integers(1, 40))
def test_a_bootstrap_in_bulk_is_the_loops_to_the_last_digit(deltas, weights, seed, resamples) -> None:  # noqa: ANN001
    loop = stats.paired_bootstrap(deltas, weights, resamples=resamples, seed=seed)
    original = stats.BULK_DRAWS
    stats.BULK_DRAWS = 0  # bulk however few the draws
    try:
        bulk = stats.paired_bootstrap(deltas, weights, resamples=resamples, seed=seed)
    finally:
        stats.BULK_DRAWS = original
    assert repr(bulk) == repr(loop)  # repr: -0.0 and 0.0 told apart


def test_a_python_whose_randrange_draws_otherwise_keeps_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    def other(self: random.Random, n: int) -> int:  # a randrange taking its words another way
        return self.getrandbits(32) % n

    monkeypatch.setattr(random.Random, "_randbelow", other)
    monkeypatch.setattr(draws, "_checked", None)
    assert draws.rand_below(random.Random(1)) is None
    deltas, weights = {"code": [1.0, -0.5, 0.25, 0.0] * 300}, {"code": 1.0}
    monkeypatch.setattr(stats, "BULK_DRAWS", 0)
    rng = random.Random(9)  # the loop, as this Python draws
    expected = []
    for _ in range(50):
        expected.append(sum(deltas["code"][rng.randrange(1200)] for _ in range(1200)) / 1200)
    expected.sort()
    lo, hi = stats.paired_bootstrap(deltas, weights, resamples=50, seed=9)
    alpha = (1 - 0.95) / 2  # as paired_bootstrap takes its percentiles
    assert (lo, hi) == (stats.percentile(expected, 100 * alpha), stats.percentile(expected, 100 * (1 - alpha)))


def test_without_numpy_the_loop_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)  # import numpy raises ImportError
    assert draws.rand_below(random.Random(0)) is None
    monkeypatch.setattr(stats, "BULK_DRAWS", 0)
    assert stats.paired_bootstrap({"c": [1.0, 0.0, -1.0]}, {"c": 1.0}, resamples=20, seed=4) is not None
