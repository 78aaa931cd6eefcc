"""Small, exact statistics used by the scorer. Pure Python so a reader can check every formula
(a large bootstrap takes its random indices in bulk where numpy is installed: the very indices
``randrange`` gives, score/draws.py).

Every function here is checked in ``tests/score`` against an independent computation
(statsmodels for Wilson, brute force over subsets for pass^k / pass@k).
"""

from __future__ import annotations

import math
import operator
import random
from typing import Any, Sequence

#: z for a two-sided 95 % interval
Z95 = 1.959963984540054


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when there is no data.

    Preferred to the normal interval because it stays inside [0, 1] and behaves at 0/n and n/n.
    """
    if n <= 0:
        return (0.0, 1.0)
    if not 0 <= successes <= n:
        raise ValueError(f"successes={successes} outside 0..{n}")
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the edges, no rounding residue
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return (lo, hi)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: probability that k draws without replacement from n trials all succeed, C(c,k)/C(n,k).

    Measures consistency (tau-bench): every one of k independent tries must pass.
    """
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c,k)/C(n,k), at least one of k tries passes."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_k_curves(n: int, c: int) -> tuple[list[float], list[float]]:
    """[pass^k for k=1..n] and [pass@k for k=1..n] in O(n) by running products:
    C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i) and C(n-c,k)/C(n,k) = prod_{i<k} (n-c-i)/(n-i)."""
    hat: list[float] = []
    at: list[float] = []
    ph = pm = 1.0
    for i in range(n):
        ph *= max(0, c - i) / (n - i)
        pm *= max(0, n - c - i) / (n - i)
        hat.append(ph)
        at.append(1.0 - pm)
    return hat, at


#: every k up to this is reported; above it, the 1-2-5 series and n itself (see docs/scoring.md)
K_ALL = 10


def k_grid(n: int) -> list[int]:
    """The k at which pass^k and pass@k are reported for n trials: 1..10, then 20, 50, 100, 200,
    500..., and n. Every k for n <= 10 (so small runs are unchanged); a bounded number of points
    for large n, so a task with 10^5 repetitions does not carry 10^5 figures."""
    ks = list(range(1, min(n, K_ALL) + 1))
    step = 10
    while True:
        for m in (2, 5, 10):
            k = step * m
            if k > n:
                return ks + ([n] if n > K_ALL and ks[-1] != n else [])
            if k > ks[-1]:
                ks.append(k)
        step *= 10


def pass_k_points(n: int, c: int, ks: list[int]) -> tuple[list[float], list[float]]:
    """pass^k and pass@k at the sorted ``ks`` only: the running products of :func:`pass_k_curves`
    (same operations, so the same floats to the last digit), keeping O(len(ks)) values. A factor
    max(0, c-i) is 0 from i = c on, so the products are exactly 0.0 from there: filled, not looped."""
    hat: list[float] = []
    at: list[float] = []
    if not ks:
        return hat, at
    ph = pm = 1.0
    j, nk, fails = 0, len(ks), n - c
    for i in range(ks[-1]):
        if i >= c and i >= fails:  # both products are 0.0 for good
            rest = nk - j
            return hat + [0.0] * rest, at + [1.0] * rest
        d = n - i
        ph = ph * ((c - i) / d) if i < c else 0.0
        pm = pm * ((fails - i) / d) if i < fails else 0.0
        if i + 1 == ks[j]:
            hat.append(ph)
            at.append(1.0 - pm)
            j += 1
    return hat, at


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")


def sample_std(values: Sequence[float]) -> float | None:
    """Sample standard deviation (n-1 in the denominator); None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default 'linear' method) of sorted values."""
    n = len(sorted_values)
    if n == 0:
        return None
    pos = (n - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def weighted_mean(values: dict[str, float], weights: dict[str, float]) -> float | None:
    """Macro-average: sum(w_i * v_i) / sum(w_i) over the keys that have a value; None if none."""
    keys = [k for k in values if weights.get(k, 0) > 0]
    total = sum(weights[k] for k in keys)
    if total <= 0:
        return None
    return sum(weights[k] * values[k] for k in keys) / total


def sign_test(deltas: Sequence[float]) -> float:
    """Exact two-sided sign test p-value over non-zero paired differences (1.0 when none)."""
    pos = sum(1 for d in deltas if d > 0)
    neg = sum(1 for d in deltas if d < 0)
    n = pos + neg
    if n == 0:
        return 1.0
    k = min(pos, neg)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


#: draws from which a bootstrap takes its indices in bulk (below, each ``randrange`` is cheaper than numpy's start)
BULK_DRAWS = 1 << 20


def _bulk_draws(rng: random.Random, draws: int) -> Any:
    """:func:`assay.score.draws.rand_below` for a bootstrap of ``draws`` draws, when that many."""
    if draws < BULK_DRAWS:
        return None
    from assay.score.draws import rand_below

    return rand_below(rng)


def paired_bootstrap(deltas: dict[str, list[float]], weights: dict[str, float], *, resamples: int = 2000,
                     seed: int = 0, level: float = 0.95) -> tuple[float, float] | None:
    """Percentile CI of the weighted macro-mean of paired deltas, resampling units within each category.

    ``deltas`` maps category -> per-unit (candidate - baseline) differences. Stratifying by
    category keeps the frozen category weights meaningful in every resample. Fixed seed: the
    same two runs always give the same interval.
    """
    return paired_bootstraps([deltas], weights, resamples=resamples, seed=seed, level=level)[0]


def paired_bootstraps(many: Sequence[dict[str, list[float]]], weights: dict[str, float], *, resamples: int = 2000,
                      seed: int = 0, level: float = 0.95) -> list[tuple[float, float] | None]:
    """:func:`paired_bootstrap` of each of ``many``, each interval the one it gives alone. Those of
    one shape (the same categories in the same order, each with as many units) draw the very same
    indices from the same seed, so the indices are drawn once for them all: the metrics of a
    comparison are mostly of one shape (21 of them over two runs of 2,000 units: 2.9 s, most of it
    drawing)."""
    out: list[tuple[float, float] | None] = [None] * len(many)
    shapes: dict[tuple[tuple[str, int], ...], list[int]] = {}
    kept: list[dict[str, list[float]]] = []
    for k, deltas in enumerate(many):
        cats = {c: v for c, v in deltas.items() if v and weights.get(c, 0) > 0}
        kept.append(cats)
        if cats:
            shapes.setdefault(tuple((c, len(v)) for c, v in cats.items()), []).append(k)
    for shape, members in shapes.items():
        for k, ci in zip(members, _bootstrap_shape(shape, [kept[k] for k in members], weights, resamples, seed, level)):
            out[k] = ci
    return out


def _bootstrap_shape(shape: tuple[tuple[str, int], ...], members: list[dict[str, list[float]]],
                     weights: dict[str, float], resamples: int, seed: int, level: float) -> list[tuple[float, float]]:
    """The intervals of deltas of one ``shape`` ((category, units) in order), each resample's
    indices drawn once and applied to every member: per member the same draws, the same values
    summed in the same order as it alone would have."""
    rng = random.Random(seed)
    bulk = _bulk_draws(rng, resamples * sum(n for _c, n in shape))
    stats: list[list[float]] = [[] for _ in members]
    for _ in range(resamples):
        means: list[dict[str, float]] = [{} for _ in members]
        for c, n in shape:
            if bulk is None:
                picked = [rng.randrange(n) for _ in range(n)]
            else:  # the same indices, drawn at once (score/draws.py)
                picked = bulk.take(n, n)
            get = operator.itemgetter(*picked) if n > 1 else (lambda v, i=picked[0]: (v[i],))
            for m, cats in zip(means, members):
                m[c] = sum(get(cats[c])) / n
        for s, m in zip(stats, means):
            w = weighted_mean(m, weights)
            assert w is not None
            s.append(w)
    out = []
    alpha = (1 - level) / 2
    for s in stats:
        s.sort()
        lo = percentile(s, 100 * alpha)
        hi = percentile(s, 100 * (1 - alpha))
        assert lo is not None and hi is not None
        out.append((lo, hi))
    return out
