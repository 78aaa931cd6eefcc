"""Display formatting of figures, in one place: rates are rounded here, for display only."""

from __future__ import annotations

from typing import Any

from assay.records.scores import Interval, TaskScore


def pct(v: float | None, sep: str = "") -> str:
    """A rate in [0, 1] as a percentage with one decimal; 'n/a' for no data (never 0 %)."""
    return "n/a" if v is None else f"{100 * v:.1f}{sep}%"


def num(v: float | None, fmt: str = ".4g") -> str:
    return "n/a" if v is None else format(v, fmt)


def signed(v: float | None, fmt: str = "+.4g") -> str:
    return "n/a" if v is None else format(v, fmt)


def interval(ci: Interval | None, sep: str = "") -> str:
    """A 95 % interval of a rate, '[lo%, hi%]'; 'n/a' when there is no data to bound."""
    if ci is None or ci[0] is None or ci[1] is None:
        return "[n/a]"
    return f"[{pct(ci[0], sep)}, {pct(ci[1], sep)}]"


def delta_interval(m: Any, spec: str = "+.3g") -> str:
    """A comparison metric's 95 % interval: 'no interval (n = 1)' for a single pair (a bootstrap
    of one difference is that difference, which would read as certainty), 'n/a' without data."""
    if getattr(m, "units", 0) < 2:
        return f"no interval (n = {getattr(m, 'units', 0)})"
    ci = m.ci
    if ci is None:
        return "n/a"
    return f"[{ci[0]:{spec}}, {ci[1]:{spec}}]"


def turn_summary(t: TaskScore) -> str:
    """A conversation task's per-turn figures, e.g. 't1 3/3 pass^3 1.00 · t2 2/3 pass^3 0.00'
    (empty for a single-turn task); the highest k the turn's trials give."""
    if not t.turns:
        return ""
    parts = []
    for turn in sorted(t.turns, key=int):
        ts = t.turns[turn]
        k = max(t.turns[turn].pass_hat_k, key=int, default=None)
        hat = f" pass^{k} {num(ts.pass_hat_k[k], '.2f')}" if k is not None else ""
        parts.append(f"t{turn} {ts.passes}/{ts.n}{hat}")
    return " · ".join(parts)
