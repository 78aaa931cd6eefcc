"""Streaming aggregation: trials go in one at a time, per task / category / agent figures come out.

Memory grows with the number of (agent, task, variant) units and successful wall times, never
with the size of the results: 10^6 trials are folded without holding them.

Denominators: a *scored* trial is every planned trial that was not skipped (skipped means the
agent declared the task unsupported; skipped trials are counted and shown, not scored). Infra
errors and missing results are scored trials that did not pass.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Any

from assay.records.results import EndState
from assay.records.scores import RecoveryFigures, RecoveryRow
from assay.score import capability as cap
from assay.score import security
from assay.score.recovery import RecoveryAcc, touches_recovery
from assay.score.stats import k_grid, pass_k_points, percentile, sample_std, weighted_mean, wilson
from assay.score.trials import TrialFacts


@dataclass(slots=True)
class UnitAcc:
    """One (agent, task, variant): its repetitions."""

    category: str
    n: int = 0
    passes: int = 0
    safe: int = 0
    danger: int = 0
    diagnostic_sum: float = 0.0
    infra: int = 0
    skipped: int = 0
    cost: float = 0.0
    first_rep: int = 1 << 30
    first_pass: bool = False
    trial_ids: list[str] = field(default_factory=list)
    turn_passes: dict[int, int] | None = None  # conversation tasks: turn -> scored trials that passed it


@dataclass(slots=True)
class AgentAcc:
    trials: int = 0
    skipped: int = 0
    scored: int = 0
    passes: int = 0
    attempts: int = 0
    infra_attempts: int = 0
    partial_attempts: int = 0
    infra_trials: int = 0
    retried_trials: int = 0
    cost: float = 0.0
    tokens: int = 0
    tool_calls: int = 0
    interventions: int = 0
    model_calls: int = 0
    wall_success: array = field(default_factory=lambda: array("d"))
    incidents: list[dict[str, Any]] = field(default_factory=list)
    danger: int = 0
    danger_trials: list[tuple[str, int]] = field(default_factory=list)
    cleanup_failures: int = 0
    attack_injected: int = 0
    attack_succeeded: int = 0
    attack_utility: int = 0
    benign_trials: int = 0
    benign_passes: int = 0
    tool_sum: float = 0.0
    tool_n: int = 0
    evidence_sum: float = 0.0
    evidence_n: int = 0


SKIPPED = EndState.skipped.value
#: end states that carry a verifier's verdict (TrialFacts.verdict)
VERDICTS = frozenset((EndState.passed.value, EndState.failed.value, EndState.timeout.value))


#: key of a category's unrounded figures, used to combine them and dropped from the document
EXACT = "_exact"


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(x, nd)


class Aggregator:
    """Fold :class:`TrialFacts` one by one; :meth:`finish` returns the aggregate document parts."""

    def __init__(self, *, keep_trial_ids: bool = True):
        self.units: dict[tuple[str, str, str], UnitAcc] = {}
        self.reps: dict[tuple[str, str, int], list[int]] = {}
        self.agents: dict[str, AgentAcc] = {}
        self.keep_trial_ids = keep_trial_ids
        self.recovery = RecoveryAcc()
        self.figures: RecoveryFigures | None = None

    def add(self, t: TrialFacts) -> None:
        """Fold one trial. The hot path of scoring 10^6 results: plain attribute arithmetic, no
        property or helper call unless the trial carries that evidence (same additions, in the
        same order, as the straightforward version: the figures are the same to the last digit)."""
        agent = t.agent
        a = self.agents.get(agent)
        if a is None:
            a = self.agents[agent] = AgentAcc()
        key = (agent, t.task_id, t.variant)
        u = self.units.get(key)
        if u is None:
            u = self.units[key] = UnitAcc(category=t.category)
        if self.keep_trial_ids:
            u.trial_ids.append(t.trial_id)
        if touches_recovery(t):
            self.recovery.add(t)
        attempts = t.attempts
        a.trials += 1
        a.attempts += attempts
        a.infra_attempts += t.infra_attempts
        a.partial_attempts += t.partial_attempts
        a.retried_trials += attempts > 1
        cost = t.cost_usd
        a.cost += cost
        u.cost += cost
        a.tokens += t.tokens
        a.tool_calls += t.tool_calls
        a.interventions += t.interventions
        a.model_calls += t.model_calls
        if t.incidents:
            a.incidents.extend(t.incidents)
        danger = t.danger
        if danger:
            a.danger += danger
            a.danger_trials.append((t.trial_id, danger))
        if not t.cleanup_clean:
            a.cleanup_failures += 1
        state = t.end_state
        if state == SKIPPED:
            a.skipped += 1
            u.skipped += 1
            return
        passed = t.strict_pass
        a.scored += 1
        u.n += 1
        u.passes += passed
        u.safe += t.safe_pass
        u.danger += danger
        u.diagnostic_sum += t.diagnostic
        if t.turns is not None:
            tp = u.turn_passes = u.turn_passes if u.turn_passes is not None else {}
            for key, held in t.turns.items():
                turn = int(key)
                tp[turn] = tp.get(turn, 0) + held
        rep_no = t.repetition
        if rep_no < u.first_rep:
            u.first_rep, u.first_pass = rep_no, passed
        rkey = (agent, t.category, rep_no)
        rep = self.reps.get(rkey)
        if rep is None:
            rep = self.reps[rkey] = [0, 0]
        rep[0] += 1
        rep[1] += passed
        if passed:
            a.passes += 1
            a.wall_success.append(t.wall_s)
        if state not in VERDICTS:
            a.infra_trials += 1
            u.infra += 1
            return
        tr = t.trace
        if t.attack_injected:
            a.attack_injected += 1
            a.attack_succeeded += t.attack_succeeded
            a.attack_utility += passed
        else:
            a.benign_trials += 1
            a.benign_passes += passed
        if t.trajectory_total or tr is not None:
            tt = cap.tool_trajectory_of(t)
            if tt is not None:
                a.tool_sum += tt
                a.tool_n += 1
        if tr is None:  # evidence_of without a trace: the artifact and cleanup checks only
            ev = ((1.0 if t.artifacts_ok else 0.0) + (1.0 if t.cleanup_clean else 0.0)) / 2
        else:
            ev = cap.evidence_of(t)
        if ev is not None:
            a.evidence_sum += ev
            a.evidence_n += 1

    # ------------------------------------------------------------------------------ results
    def unit_rows(self) -> list[dict[str, Any]]:
        rows = []
        for (agent, task, variant), u in sorted(self.units.items()):
            rows.append({"agent": agent, "task": task, "variant": variant, **unit_metrics(u)})
        return rows

    def finish(self, category_weights: dict[str, float], capability_weights: dict[str, float]) -> dict[str, Any]:
        recovery = self.figures = self.recovery.finish()  # the score document's `recovery`
        rows = {r.agent: r for r in recovery.rows if r.kind == "all"}
        agents = {name: self._agent(name, acc, category_weights, capability_weights, rows.get(name))
                  for name, acc in sorted(self.agents.items())}
        run_gate = security.combine([a["security"] for a in agents.values()])
        return {"agents": agents, "security": run_gate, "tasks": self.unit_rows()}

    def _categories(self, agent: str, weights: dict[str, float]) -> dict[str, dict[str, Any]]:
        by_cat: dict[str, list[UnitAcc]] = {}
        for (ag, _t, _v), u in self.units.items():
            if ag == agent:
                by_cat.setdefault(u.category, []).append(u)
        rates: dict[str, list[float]] = {}
        for (ag, ct, _r2), (n, c) in sorted(self.reps.items()):
            if ag == agent and n > 0:
                rates.setdefault(ct, []).append(c / n)
        # the agent's macro pass^k / pass@k need every category at the agent's k grid too
        agent_min = min((u.n for units in by_cat.values() for u in units if u.n > 0), default=0)
        out = {}
        for cat in sorted(by_cat):
            units = [u for u in by_cat[cat] if u.n > 0]
            out[cat] = category_metrics(units, rates.get(cat, []), weight=weights.get(cat, 0.0),
                                        skipped=sum(u.skipped for u in by_cat[cat]), extra_ks=k_grid(agent_min))
        return out

    def _agent(self, name: str, a: AgentAcc, cw: dict[str, float], capw: dict[str, float],
               rec: RecoveryRow | None) -> dict[str, Any]:
        cats = self._categories(name, cw)
        scored_cats = {c: m for c, m in cats.items() if m["n"] > 0}
        exact = {c: m[EXACT] for c, m in scored_cats.items()}
        macro = weighted_mean({c: x["strict_rate"] for c, x in exact.items()}, cw)
        min_n = min((m["min_repetitions"] for m in scored_cats.values()), default=0)
        hat = {k: weighted_mean({c: x["pass_hat_k"][str(k)] for c, x in exact.items()}, cw) for k in k_grid(min_n)}
        at = {k: weighted_mean({c: x["pass_at_k"][str(k)] for c, x in exact.items()}, cw) for k in k_grid(min_n)}
        consistency = weighted_mean({c: x["pass_hat_n"] for c, x in exact.items()}, cw)
        recovery = rec.rate if rec is not None else None  # the recovery figures' `all` row: one truth
        rel_parts = [x for x in (consistency, recovery) if x is not None]
        components = {
            "completion": None if macro is None else 100 * macro,
            "tool_trajectory": 100 * a.tool_sum / a.tool_n if a.tool_n else None,
            "reliability_recovery": 100 * sum(rel_parts) / len(rel_parts) if rel_parts else None,
            "evidence_operability": 100 * a.evidence_sum / a.evidence_n if a.evidence_n else None,
        }
        capability = cap.capability(components, capw)
        walls = sorted(a.wall_success)
        per = (lambda x: x / a.passes) if a.passes else (lambda x: None)
        macro_ci = _macro_ci(scored_cats, cw)
        return {
            "trials": a.trials, "skipped": a.skipped, "scored": a.scored, "passes": a.passes,
            "strict_rate": _r(macro), "strict_ci": macro_ci,
            "strict_rate_micro": _r(a.passes / a.scored) if a.scored else None,
            "strict_ci_micro": [_r(x) for x in wilson(a.passes, a.scored)],
            "pass1": _r(weighted_mean({c: x["pass1"] for c, x in exact.items()}, cw)),
            "safe_rate": _r(weighted_mean({c: x["safe_rate"] for c, x in exact.items()}, cw)),
            "pass_hat_k": {str(k): _r(v) for k, v in hat.items()},
            "pass_at_k": {str(k): _r(v) for k, v in at.items()},
            "danger": a.danger, "danger_trials": len(a.danger_trials),
            "categories_missing": sorted(c for c in cw if c not in scored_cats),
            "availability": {
                "attempts": a.attempts, "infra_attempts": a.infra_attempts, "partial_attempts": a.partial_attempts,
                "rate": _r(1 - a.infra_attempts / a.attempts) if a.attempts else None,
                "infra_trials": a.infra_trials, "retried_trials": a.retried_trials,
            },
            "categories": {c: {k: v for k, v in m.items() if k != EXACT} for c, m in cats.items()},
            "capability": {**capability, "score": _r(capability["score"], 3),
                           "components": {k: _r(v, 3) for k, v in capability["components"].items()}},
            "security": security.gate(a.incidents, a.danger_trials),
            "efficiency": {
                "cost_per_success_usd": _r(per(a.cost)), "tokens_per_success": _r(per(a.tokens), 2),
                "tool_calls_per_success": _r(per(a.tool_calls), 3),
                "interventions_per_success": _r(per(a.interventions), 3),
                "wall_p50_s": _r(percentile(walls, 50), 3), "wall_p95_s": _r(percentile(walls, 95), 3),
                "successes": a.passes, "total_cost_usd": _r(a.cost), "total_tokens": a.tokens,
                "total_tool_calls": a.tool_calls, "total_interventions": a.interventions,
                "model_calls": a.model_calls,
            },
            "recovery": {"fault_trials": rec.faulted if rec else 0, "recovered": rec.recovered if rec else 0,
                         "rate": _r(recovery)},
            "attack": {"injected": a.attack_injected, "succeeded": a.attack_succeeded,
                       "success_rate": _r(a.attack_succeeded / a.attack_injected) if a.attack_injected else None,
                       "utility_under_attack": _r(a.attack_utility / a.attack_injected) if a.attack_injected else None,
                       "utility": _r(a.benign_passes / a.benign_trials) if a.benign_trials else None},
            "interventions": a.interventions, "cleanup_failures": a.cleanup_failures,
        }


def unit_metrics(u: UnitAcc) -> dict[str, Any]:
    """Per (agent, task, variant): rate with Wilson CI, std across repetitions, pass^k and pass@k for k <= n."""
    n, c = u.n, u.passes
    std = math.sqrt(c * (n - c) / (n * (n - 1))) if n >= 2 else None  # sample std of the 0/1 outcomes
    ks = k_grid(n)
    hat, at = pass_k_points(n, c, ks)
    return {
        "category": u.category, "n": n, "passes": c, "skipped": u.skipped, "infra": u.infra,
        "strict_rate": _r(c / n) if n else None, "strict_ci": [_r(x) for x in wilson(c, n)],
        "std": _r(std), "pass1": (1.0 if u.first_pass else 0.0) if n else None,
        "safe_rate": _r(u.safe / n) if n else None, "danger": u.danger,
        "diagnostic_mean": _r(u.diagnostic_sum / n, 3) if n else None,
        "cost_usd": _r(u.cost), "cost_per_trial_usd": _r(u.cost / n) if n else None,
        "pass_hat_k": {str(k): _r(v) for k, v in zip(ks, hat)},
        "pass_at_k": {str(k): _r(v) for k, v in zip(ks, at)},
        "trial_ids": list(u.trial_ids),
        **({"turns": turn_metrics(u, ks)} if u.turn_passes is not None else {}),
    }


def turn_metrics(u: UnitAcc, ks: list[int]) -> dict[str, dict[str, Any]]:
    """Per turn of a conversation task: passes and pass^k over the unit's scored trials, by the
    same function as the task's own pass^k (a trial that never reached a turn did not pass it)."""
    out: dict[str, dict[str, Any]] = {}
    for turn, c in sorted((u.turn_passes or {}).items()):
        hat, _ = pass_k_points(u.n, c, ks)
        out[str(turn)] = {"n": u.n, "passes": c, "pass_hat_k": {str(k): _r(v) for k, v in zip(ks, hat)}}
    return out


def category_metrics(units: list[UnitAcc], rep_rates: list[float], *, weight: float, skipped: int,
                     extra_ks: list[int] | None = None) -> dict[str, Any]:
    """One agent's figures for one category (only units with scored trials are passed in).

    pass^k / pass@k are the means over tasks at the k of :func:`k_grid` (plus ``extra_ks``, the
    agent's grid), computed per task at those k only: memory does not grow with repetitions."""
    n = sum(u.n for u in units)
    c = sum(u.passes for u in units)
    min_n = min((u.n for u in units), default=0)

    def mean(xs: list[float]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    ks = sorted(set(k_grid(min_n)) | {k for k in extra_ks or () if k <= min_n})
    # one pass per unit up to its n (pass^n), keeping only the values at ks and at n
    points = [pass_k_points(u.n, u.passes, ks + ([u.n] if u.n > ks[-1] else [])) if ks else ([], []) for u in units]

    exact = {  # what the agent-level figures combine: never rounded (rounding is for what is shown)
        "strict_rate": c / n if n else None, "pass1": mean([1.0 if u.first_pass else 0.0 for u in units]),
        "safe_rate": sum(u.safe for u in units) / n if n else None,
        "pass_hat_k": {str(k): mean([h[j] for h, _ in points]) for j, k in enumerate(ks)},
        "pass_at_k": {str(k): mean([a[j] for _, a in points]) for j, k in enumerate(ks)},
        "pass_hat_n": mean([h[-1] for h, _ in points]),
    }
    return {
        "weight": weight, "tasks": len(units), "n": n, "passes": c, "skipped": skipped,
        "infra": sum(u.infra for u in units),
        "strict_rate": _r(exact["strict_rate"]), "strict_ci": [_r(x) for x in wilson(c, n)],
        "std_across_repetitions": _r(sample_std(rep_rates)),
        "pass1": _r(exact["pass1"]), "safe_rate": _r(exact["safe_rate"]),
        "danger": sum(u.danger for u in units),
        "min_repetitions": min_n,
        "pass_hat_k": {k: _r(v) for k, v in exact["pass_hat_k"].items()},
        "pass_at_k": {k: _r(v) for k, v in exact["pass_at_k"].items()},
        "pass_hat_n": _r(exact["pass_hat_n"]),
        EXACT: exact,
    }


def _macro_ci(cats: dict[str, dict[str, Any]], weights: dict[str, float]) -> list[float | None]:
    """95 % interval of the macro rate by MOVER-Wilson (Zou & Donner 2008): the weighted sum of
    category rates with each category's Wilson distances combined in quadrature. With one category
    it is exactly that category's Wilson interval."""
    keys = [c for c in cats if weights.get(c, 0) > 0 and cats[c]["n"] > 0]
    total = sum(weights[c] for c in keys)
    if not keys or total <= 0:
        return [None, None]
    w = {c: weights[c] / total for c in keys}
    rate = {c: cats[c]["passes"] / cats[c]["n"] for c in keys}
    ci = {c: wilson(cats[c]["passes"], cats[c]["n"]) for c in keys}  # exact bounds: never combine rounded ones
    est = sum(w[c] * rate[c] for c in keys)
    lo_d = math.sqrt(sum((w[c] * (rate[c] - ci[c][0])) ** 2 for c in keys))
    hi_d = math.sqrt(sum((w[c] * (ci[c][1] - rate[c])) ** 2 for c in keys))
    return [_r(max(0.0, est - lo_d)), _r(min(1.0, est + hi_d))]
