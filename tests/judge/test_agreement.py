"""Agreement figures against independent computations: statsmodels for Cohen's kappa and a
brute-force coincidence matrix for Krippendorff's alpha."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from assay.judge import agreement as ag


def _statsmodels_kappa(a: list[str], b: list[str]) -> float:
    cats = sorted(set(a) | set(b))
    table = np.zeros((len(cats), len(cats)))
    for x, y in zip(a, b):
        table[cats.index(x), cats.index(y)] += 1
    return float(cohens_kappa(table).kappa)


def _brute_alpha_nominal(raters: list[list[str | None]]) -> float:
    """Krippendorff's alpha (nominal) from the coincidence matrix, written out by hand."""
    units = list(zip(*raters))
    coincidence: Counter[tuple[str, str]] = Counter()
    for unit in units:
        vals = [v for v in unit if v is not None]
        m = len(vals)
        if m < 2:
            continue
        for i, c in enumerate(vals):
            for j, k in enumerate(vals):
                if i != j:
                    coincidence[(c, k)] += 1 / (m - 1)
    n_c: Counter[str] = Counter()
    for (c, _), w in coincidence.items():
        n_c[c] += w
    n = sum(n_c.values())
    d_o = sum(w for (c, k), w in coincidence.items() if c != k)
    d_e = sum(n_c[c] * n_c[k] for c in n_c for k in n_c if c != k) / (n - 1)
    return 1 - d_o / d_e


@pytest.mark.parametrize("seed", range(8))
def test_cohen_kappa_matches_statsmodels(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.choice("ABT") for _ in range(40)]
    b = [x if rng.random() < 0.6 else rng.choice("ABT") for x in a]
    assert ag.cohen_kappa(a, b) == pytest.approx(_statsmodels_kappa(a, b), abs=1e-12)


def test_kappa_corrects_for_chance_and_is_undefined_without_variation() -> None:
    # 95 % "good" from two independent-looking raters: high raw agreement, kappa near zero
    a = ["good"] * 19 + ["bad"]
    b = ["good"] * 18 + ["bad", "good"]
    assert sum(x == y for x, y in zip(a, b)) / 20 == 0.9
    assert ag.cohen_kappa(a, b) == pytest.approx(-0.0526, abs=1e-3)
    assert ag.cohen_kappa(["A", "A"], ["A", "A"]) is None
    assert ag.cohen_kappa([], []) is None


@pytest.mark.parametrize("seed", range(6))
def test_krippendorff_alpha_matches_brute_force(seed: int) -> None:
    rng = random.Random(100 + seed)
    base = [rng.choice(["A", "B", "tie"]) for _ in range(30)]
    raters = [[x if rng.random() < 0.8 else rng.choice(["A", "B", "tie"]) for x in base] for _ in range(3)]
    raters[2][5] = None  # a missing label
    assert ag.krippendorff_alpha(raters) == pytest.approx(_brute_alpha_nominal(raters), abs=1e-9)


def test_flip_rate_rates_and_length_bias() -> None:
    assert ag.flip_rate(["A", "B", "tie", "A"], ["B", "A", "tie", "A"]) == 0.25
    assert ag.flip_rate([], []) is None
    assert ag.rates([True, False, True, False], [True, True, False, False]) == (0.5, 0.5)
    assert ag.rates([True], [True]) == (1.0, None)
    assert ag.spearman([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert ag.spearman([1, 2, 3], [1, 1, 1]) is None


@pytest.mark.parametrize("raters", [
    [["A", "B"], ["A", None]],  # the one item rated twice has one value: no expected disagreement (NaN before)
    [["A", None, "B"], [None, "B", None]],  # no item rated twice: the library raised ValueError
])
def test_alpha_is_none_where_the_data_cannot_give_it(raters: list) -> None:
    """The record says None where a figure cannot be had; NaN is no JSON number and broke the record."""
    assert ag.krippendorff_alpha(raters) is None
