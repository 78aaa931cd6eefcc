"""Agreement between a judge and human labellers, and the judge's biases.

Raw agreement flatters skewed labels (two raters saying "good" 95 % of the time agree often by
chance), so the figures are chance-corrected: Cohen's kappa for two raters, Krippendorff's alpha
(the ``krippendorff`` package) for more. Position bias is the flip rate when A and B swap;
length bias is read for the judge *and* the humans side by side, so that "longer answers really
are better" is not misread as bias.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from assay.spec.judge import SWAPPED

Label = str | int


def cohen_kappa(a: Sequence[Label], b: Sequence[Label]) -> float | None:
    """Cohen's kappa of two raters over the same items (None: no items, or no variation at all)."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same items")
    n = len(a)
    if n == 0:
        return None
    observed = sum(1 for x, y in zip(a, b) if x == y) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / (n * n)
    if expected >= 1.0:
        return None  # both raters used a single, identical label: kappa is undefined
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(raters: Sequence[Sequence[Label | None]], level: str = "nominal") -> float | None:
    """Krippendorff's alpha over raters x items (None marks a missing label)."""
    import krippendorff
    import numpy as np

    values = sorted({v for row in raters for v in row if v is not None}, key=str)
    if len(values) < 2:
        return None
    if not any(sum(row[i] is not None for row in raters) >= 2 for i in range(min(map(len, raters), default=0))):
        return None  # no item rated twice (e.g. no judge answer parsed against one round of labels)
    code = {v: float(i) for i, v in enumerate(values)}
    data = np.array([[np.nan if v is None else code[v] for v in row] for row in raters], dtype=float)
    if level == "ordinal" or level == "interval":
        data = np.array([[np.nan if v is None else float(v) for v in row] for row in raters], dtype=float)
    alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    return None if alpha != alpha else alpha  # NaN (no expected disagreement): the figure cannot be had


def rates(judge: Sequence[bool], human: Sequence[bool]) -> tuple[float | None, float | None]:
    """(TPR, TNR) of the judge's binary decisions against the humans' (None without positives/negatives)."""
    pos = [j for j, h in zip(judge, human) if h]
    neg = [j for j, h in zip(judge, human) if not h]
    tpr = sum(pos) / len(pos) if pos else None
    tnr = sum(1 for j in neg if not j) / len(neg) if neg else None
    return tpr, tnr


def flip_rate(first: Sequence[str], swapped: Sequence[str]) -> float | None:
    """Share of pairs whose verdict changes with the order: order 1 said A (B) but the swapped order
    did not say B (A) for the same answer. Ties must stay ties."""
    pairs = [(x, y) for x, y in zip(first, swapped)]
    if not pairs:
        return None
    return sum(1 for x, y in pairs if SWAPPED[x] != y) / len(pairs)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (None when either side has no variation or fewer than 3 points)."""
    from scipy.stats import spearmanr

    if len(x) < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rho = spearmanr(x, y).statistic
    return None if rho != rho else float(rho)


def preference(label: Label) -> float:
    """+1 when A is preferred, -1 for B, 0 for a tie (pairwise labels)."""
    return {"A": 1.0, "B": -1.0, "tie": 0.0}[str(label)]
