"""The statistics against independent computations: statsmodels for Wilson, brute force for the rest."""

from __future__ import annotations

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.score.stats import (paired_bootstrap, pass_at_k, pass_hat_k, pass_k_curves, percentile, sample_std, sign_test,
                               weighted_mean, wilson)

statsmodels_proportion = pytest.importorskip("statsmodels.stats.proportion")


@st.composite
def n_c(draw, max_n: int = 12):
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n))


@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
@settings(max_examples=300, deadline=None)
def test_wilson_matches_statsmodels(nc):
    n, c = nc
    lo, hi = wilson(c, n)
    ref_lo, ref_hi = statsmodels_proportion.proportion_confint(c, n, alpha=0.05, method="wilson")
    assert lo == pytest.approx(ref_lo, abs=1e-9)
    assert hi == pytest.approx(ref_hi, abs=1e-9)
    assert 0 <= lo <= c / n <= hi <= 1


def test_wilson_edges():
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and 0 < hi < 0.35
    with pytest.raises(ValueError):
        wilson(11, 10)


@given(n_c(), st.data())
@settings(max_examples=200, deadline=None)
def test_pass_hat_k_and_pass_at_k_by_brute_force(nc, data):
    """pass^k = share of k-subsets of the n outcomes that are all passes; pass@k = share with any pass."""
    n, c = nc
    k = data.draw(st.integers(1, n))
    outcomes = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(range(n), k))
    all_pass = sum(all(outcomes[i] for i in s) for s in subsets) / len(subsets)
    any_pass = sum(any(outcomes[i] for i in s) for s in subsets) / len(subsets)
    assert pass_hat_k(n, c, k) == pytest.approx(all_pass)
    assert pass_at_k(n, c, k) == pytest.approx(any_pass)
    assert pass_hat_k(n, c, k) <= c / n + 1e-12 <= pass_at_k(n, c, k) + 2e-12


@given(st.integers(1, 600).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
@settings(max_examples=150, deadline=None)
def test_fast_curves_match_exact_combinatorics(nc):
    n, c = nc
    hat, at = pass_k_curves(n, c)
    assert len(hat) == len(at) == n
    for k in {k for k in (1, 2, n // 2, n - 1, n) if 1 <= k <= n}:
        assert hat[k - 1] == pytest.approx(pass_hat_k(n, c, k), rel=1e-9, abs=1e-12)
        assert at[k - 1] == pytest.approx(pass_at_k(n, c, k), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("n,c,k", [(0, 0, 1), (3, 4, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_k_rejects_impossible_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


@given(st.dictionaries(st.sampled_from("abcdef"), st.tuples(st.floats(0, 1), st.floats(0.01, 10)), min_size=1))
def test_weighted_mean_brute_force(d):
    values = {k: v for k, (v, _) in d.items()}
    weights = {k: w for k, (_, w) in d.items()}
    expected = sum(values[k] * weights[k] for k in d) / sum(weights.values())
    assert weighted_mean(values, weights) == pytest.approx(expected)


def test_weighted_mean_ignores_unweighted_and_empty():
    assert weighted_mean({"a": 1.0, "b": 0.0}, {"a": 1.0}) == 1.0
    assert weighted_mean({}, {"a": 1.0}) is None


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=50), st.floats(0, 100))
def test_percentile_matches_numpy(xs, q):
    np = pytest.importorskip("numpy")
    assert percentile(sorted(xs), q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-9, abs=1e-6)


def test_sample_std():
    assert sample_std([1.0]) is None
    assert sample_std([1.0, 3.0]) == pytest.approx(math.sqrt(2))


def test_sign_test_exact():
    scipy_stats = pytest.importorskip("scipy.stats")
    deltas = [1, 1, 1, 1, 1, 1, -1, 0, 0]
    assert sign_test(deltas) == pytest.approx(scipy_stats.binomtest(6, 7).pvalue)
    assert sign_test([0, 0]) == 1.0


def test_paired_bootstrap_is_deterministic_and_covers_the_mean():
    rng = random.Random(1)
    deltas = {"a": [rng.gauss(0.2, 0.1) for _ in range(40)], "b": [rng.gauss(-0.1, 0.1) for _ in range(40)]}
    w = {"a": 0.75, "b": 0.25}
    ci1 = paired_bootstrap(deltas, w, seed=3)
    ci2 = paired_bootstrap(deltas, w, seed=3)
    assert ci1 == ci2
    point = weighted_mean({c: sum(v) / len(v) for c, v in deltas.items()}, w)
    assert ci1[0] < point < ci1[1]
    assert paired_bootstrap({}, w) is None
