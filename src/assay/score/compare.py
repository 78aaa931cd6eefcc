"""Compare two runs on their shared subset only, paired per task, with intervals and CI gates.

Numerator and denominator always come from the same subset: the (task, variant, agent role)
units scored in *both* runs. Everything else is listed as left out, never silently dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError
from assay.score.stats import paired_bootstrap, sign_test, weighted_mean

COMPARE_SCHEMA = "assay.compare/1"
BOOTSTRAP_SEED = 20240917
BOOTSTRAP_RESAMPLES = 2000

#: metric -> (field of a task row, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "strict_rate": ("strict_rate", True),
    "pass1": ("pass1", True),
    "safe_rate": ("safe_rate", True),
    "diagnostic": ("diagnostic_mean", True),
    "danger_rate": ("danger_rate", False),
    "infra_rate": ("infra_rate", False),
    "cost_per_trial_usd": ("cost_per_trial_usd", False),
}

_CHECK = re.compile(r"^\s*([a-z0-9_]+)\s*(<=|>=|<|>)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """A CI gate on a metric's delta (candidate - baseline), e.g. ``strict_rate<-0.05`` fails the
    gate when the strict rate dropped by more than 5 points. ``gate`` fails when the candidate's
    security gate failed."""

    metric: str
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> "Threshold":
        if text.strip() == "gate":
            return cls("gate", "==", 0.0)
        m = _CHECK.match(text)
        if not m or m.group(1) not in METRICS:
            raise UsageError(f"--fail-if {text!r}: expected METRIC<VALUE or METRIC>VALUE with METRIC one of "
                             f"{', '.join(METRICS)} (or 'gate')")
        return cls(m.group(1), m.group(2), float(m.group(3)))

    def trips(self, delta: float | None) -> bool:
        if delta is None:
            return False
        return {"<": delta < self.value, "<=": delta <= self.value, ">": delta > self.value,
                ">=": delta >= self.value}[self.op]

    def __str__(self) -> str:
        return "gate" if self.metric == "gate" else f"{self.metric}{self.op}{self.value:g}"


def _unit_value(row: dict[str, Any], field: str) -> float | None:
    n = row.get("n") or 0
    if field == "danger_rate":
        return row["danger"] / n if n else None
    if field == "infra_rate":
        return row["infra"] / n if n else None
    v = row.get(field)
    return None if v is None else float(v)


def _agent_pairs(base: dict[str, Any], cand: dict[str, Any], agent_map: dict[str, str] | None) -> dict[str, str]:
    if agent_map:
        return dict(agent_map)
    ba, ca = set(base["agents"]), set(cand["agents"])
    shared = ba & ca
    if shared:
        return {a: a for a in sorted(shared)}
    if len(ba) == 1 and len(ca) == 1:
        return {next(iter(ba)): next(iter(ca))}  # one agent each: the same role
    return {}


def compare_scores(base: dict[str, Any], cand: dict[str, Any], *, agent_map: dict[str, str] | None = None,
                   thresholds: list[Threshold] | None = None) -> dict[str, Any]:
    """Paired comparison of two score documents (from :func:`assay.score.score_run`)."""
    pairs = _agent_pairs(base, cand, agent_map)
    b_rows = {(r["agent"], r["task"], r["variant"]): r for r in base["tasks"]}
    c_rows = {(r["agent"], r["task"], r["variant"]): r for r in cand["tasks"]}
    shared: list[tuple[dict[str, Any], dict[str, Any]]] = []
    left_out: list[dict[str, Any]] = []
    for key, br in sorted(b_rows.items()):
        agent, task, variant = key
        if agent not in pairs:
            left_out.append({"agent": agent, "task": task, "variant": variant, "why": "agent not in the candidate"})
            continue
        cr = c_rows.get((pairs[agent], task, variant))
        if cr is None:
            left_out.append({"agent": agent, "task": task, "variant": variant, "why": "not in the candidate"})
        elif not br["n"] or not cr["n"]:
            left_out.append({"agent": agent, "task": task, "variant": variant, "why": "skipped in one run"})
        else:
            shared.append((br, cr))
    paired_c = {(pairs[a], t, v) for (a, t, v) in b_rows if a in pairs}
    for (agent, task, variant) in sorted(c_rows):
        if (agent, task, variant) not in paired_c:
            left_out.append({"agent": agent, "task": task, "variant": variant,
                             "why": "candidate unit with no paired baseline unit"})

    weights = dict(base["weights"]["categories"])
    metrics = {name: _metric(shared, f, hb, weights) for name, (f, hb) in METRICS.items()}
    by_agent: dict[str, dict[str, Any]] = {}
    for agent, cagent in pairs.items():
        sub = [(b, c) for b, c in shared if b["agent"] == agent]
        if sub:
            by_agent[f"{agent}={cagent}" if agent != cagent else agent] = {
                name: _metric(sub, f, hb, weights) for name, (f, hb) in METRICS.items()}

    gates = {"baseline": base["security"]["gate"], "candidate": cand["security"]["gate"]}
    failed: list[str] = []
    for th in thresholds or []:
        if th.metric == "gate":
            if gates["candidate"] != "PASSED":
                failed.append(f"gate: candidate security gate {gates['candidate']}")
            continue
        for scope, ms in [("all", metrics), *by_agent.items()]:
            if th.trips(ms[th.metric]["delta"]):
                failed.append(f"{th} ({scope}): delta {ms[th.metric]['delta']:+.4f}")
    notes = []
    if base["weights"]["categories"] != cand["weights"]["categories"]:
        notes.append("category weights differ between the runs; the baseline's frozen weights are used")
    for side, doc in (("baseline", base), ("candidate", cand)):
        if doc.get("isolation", {}).get("warning"):
            notes.append(f"{side}: {doc['isolation']['warning']}")
    return {
        "schema": COMPARE_SCHEMA,
        "baseline": {"run_id": base["run_id"], "rules_digest": base["rules_digest"]},
        "candidate": {"run_id": cand["run_id"], "rules_digest": cand["rules_digest"]},
        "agent_pairs": pairs,
        "shared_units": len(shared),
        "left_out": left_out,
        "method": {"interval": f"paired bootstrap over tasks, stratified by category, {BOOTSTRAP_RESAMPLES} "
                               f"resamples, seed {BOOTSTRAP_SEED}, 95 % percentile interval",
                   "test": "exact two-sided sign test over per-task deltas",
                   "moved": "the 95 % interval of the delta excludes 0 and the sign test gives p < 0.05"},
        "metrics": metrics,
        "by_agent": by_agent,
        "security": gates,
        "notes": notes,
        "thresholds": [str(t) for t in thresholds or []],
        "failed": failed,
        "regressed": bool(failed),
    }


def _metric(shared: list[tuple[dict[str, Any], dict[str, Any]]], field: str, higher_better: bool,
            weights: dict[str, float]) -> dict[str, Any]:
    by_cat_b: dict[str, list[float]] = {}
    by_cat_c: dict[str, list[float]] = {}
    deltas: dict[str, list[float]] = {}
    for br, cr in shared:
        bv, cv = _unit_value(br, field), _unit_value(cr, field)
        if bv is None or cv is None:
            continue
        cat = br["category"]
        by_cat_b.setdefault(cat, []).append(bv)
        by_cat_c.setdefault(cat, []).append(cv)
        deltas.setdefault(cat, []).append(cv - bv)

    def macro(d: dict[str, list[float]]) -> float | None:
        return weighted_mean({c: sum(v) / len(v) for c, v in d.items() if v}, weights)

    bval, cval = macro(by_cat_b), macro(by_cat_c)
    delta = None if bval is None or cval is None else cval - bval
    ci = paired_bootstrap(deltas, weights, resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)
    flat = [d for v in deltas.values() for d in v]
    p_sign = sign_test(flat)
    moved = ci is not None and (ci[0] > 0 or ci[1] < 0) and p_sign < 0.05
    direction = None
    if moved and delta is not None:
        direction = "improved" if (delta > 0) == higher_better else "regressed"
    return {"baseline": bval, "candidate": cval, "delta": delta, "ci": list(ci) if ci else None,
            "p_sign_test": p_sign, "units": len(flat), "higher_is_better": higher_better,
            "moved_beyond_noise": moved, "direction": direction}
