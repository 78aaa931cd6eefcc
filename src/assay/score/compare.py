"""Compare two runs on their shared subset only, paired per task, with intervals and CI gates.

Numerator and denominator always come from the same subset: the (task, variant, agent role)
units scored in *both* runs. Everything else is listed as left out, never silently dropped. A
comparison with nothing to compare says so (``nothing_to_compare``; the CLI exits 5), and runs of
different suites are compared only when asked, pairing tasks by their digest.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterable

from assay.errors import UsageError
from assay.records.comparison import (COMPARE_SCHEMA, CompareMethod, Comparison, Flip, GateCheck, GatePair, LeftOut,
                                   MetricDelta, RunRef)
from assay.records.scores import ScoreDocument, TaskScore
from assay.score.gates import METRICS, Threshold
from assay.score.stats import paired_bootstraps, sign_test, weighted_mean

BOOTSTRAP_SEED = 20240917
BOOTSTRAP_RESAMPLES = 2000
METHOD = CompareMethod(
    interval=f"paired bootstrap over tasks, stratified by category, {BOOTSTRAP_RESAMPLES} resamples, "
             f"seed {BOOTSTRAP_SEED}, 95 % percentile interval",
    test="exact two-sided sign test over per-task deltas",
    moved="the 95 % interval of the delta excludes 0 and the sign test gives p < 0.05")

__all__ = ["COMPARE_SCHEMA", "METRICS", "Threshold", "compare_agents", "compare_scores", "same_suite"]

Pair = tuple[TaskScore, TaskScore]
UNPAIRED_CANDIDATE = "candidate unit with no paired baseline unit"


def _unit_value(row: TaskScore, field: str) -> float | None:
    n = row.n
    if field == "danger_rate":
        return row.danger / n if n else None
    if field == "infra_rate":
        return row.infra / n if n else None
    v = getattr(row, field)
    return None if v is None else float(v)


def same_suite(base: ScoreDocument, cand: ScoreDocument) -> bool:
    """Same suite: the same digest when both runs recorded one, else the same name and version."""
    b, c = base.suite, cand.suite
    if b.digest and c.digest:
        return b.digest == c.digest
    return (b.name, b.version) == (c.name, c.version)


def _agent_pairs(base: ScoreDocument, cand: ScoreDocument, agent_map: dict[str, str] | None) -> dict[str, str]:
    if agent_map:
        unknown = [f"baseline agent {a!r}" for a in agent_map if a not in base.agents]
        unknown += [f"candidate agent {b!r}" for b in agent_map.values() if b not in cand.agents]
        if unknown:
            raise UsageError(f"--pair names {', '.join(unknown)}, not in the run (baseline agents: "
                             f"{', '.join(sorted(base.agents))}; candidate agents: {', '.join(sorted(cand.agents))})")
        return dict(agent_map)
    return {a: a for a in sorted(set(base.agents) & set(cand.agents))}


def _key(row: TaskScore, by_digest: bool) -> tuple[str, str, str]:
    return (row.agent, (row.task_digest or "") if by_digest else row.task, row.variant)


def _pair_units(base: ScoreDocument, cand: ScoreDocument, pairs: dict[str, str],
                by_digest: bool) -> tuple[list[Pair], list[LeftOut]]:
    left_out: list[LeftOut] = []
    b_rows: dict[tuple[str, str, str], TaskScore] = {}
    for r in base.tasks:
        if by_digest and not r.task_digest:
            left_out.append(LeftOut(agent=r.agent, task=r.task, variant=r.variant, why="no task digest recorded"))
        else:
            b_rows[_key(r, by_digest)] = r
    c_rows = {_key(r, by_digest): r for r in cand.tasks if not by_digest or r.task_digest}
    missing_why = "task changed or not in the candidate suite" if by_digest else "not in the candidate"
    shared: list[Pair] = []
    for (agent, key, variant), br in sorted(b_rows.items()):
        if agent not in pairs:
            left_out.append(LeftOut(agent=agent, task=br.task, variant=variant, why="agent not in the candidate"))
            continue
        cr = c_rows.get((pairs[agent], key, variant))
        if cr is None:
            left_out.append(LeftOut(agent=agent, task=br.task, variant=variant, why=missing_why))
        elif not br.n or not cr.n:
            left_out.append(LeftOut(agent=agent, task=br.task, variant=variant, why="no scored trial in one run"))
        else:
            shared.append((br, cr))
    paired_c = {(pairs[a], k, v) for (a, k, v) in b_rows if a in pairs}
    for ck in sorted(c_rows):
        if ck not in paired_c:
            cr = c_rows[ck]
            left_out.append(LeftOut(agent=cr.agent, task=cr.task, variant=cr.variant,
                                    why=UNPAIRED_CANDIDATE))
    for r in cand.tasks:
        if by_digest and not r.task_digest:
            left_out.append(LeftOut(agent=r.agent, task=r.task, variant=r.variant, why="no task digest recorded"))
    return shared, left_out


def _nothing_to_compare(base: ScoreDocument, cand: ScoreDocument, pairs: dict[str, str], shared: list[Pair]) -> str | None:
    if not pairs:
        return (f"the runs share no agent (baseline: {', '.join(sorted(base.agents)) or 'none'}; candidate: "
                f"{', '.join(sorted(cand.agents)) or 'none'}); pair them with --pair BASELINE_AGENT=CANDIDATE_AGENT")
    for side, doc, names in (("baseline", base, pairs.keys()), ("candidate", cand, pairs.values())):
        if sum(doc.agents[a].scored for a in names if a in doc.agents) == 0:
            return f"the {side} has zero scored trials for the compared agent(s)"
    if not shared:
        return "no (task, variant, agent) unit was scored in both runs"
    return None


def _flips(shared: list[Pair]) -> list[Flip]:
    out = []
    for br, cr in shared:
        b_all, c_all = br.strict_rate == 1.0, cr.strict_rate == 1.0
        if b_all != c_all:
            out.append(Flip(agent=br.agent, task=br.task, variant=br.variant, baseline=br.strict_rate,
                            candidate=cr.strict_rate, direction="improved" if c_all else "regressed"))
    return sorted(out, key=lambda f: (f.direction != "regressed", f.agent, f.task, f.variant))


def compare_scores(base: ScoreDocument, cand: ScoreDocument, *, agent_map: dict[str, str] | None = None,
                   thresholds: list[Threshold] | None = None, allow_suite_change: bool = False,
                   metrics: Iterable[str] | None = None) -> Comparison:
    """Paired comparison of two score documents (from :func:`assay.score.score_run`)."""
    changed_suite = not same_suite(base, cand)
    if changed_suite and not allow_suite_change:
        raise UsageError(f"the runs are of different suites (baseline {base.suite.name} {base.suite.version} "
                         f"{(base.suite.digest or '')[:12]}, candidate {cand.suite.name} {cand.suite.version} "
                         f"{(cand.suite.digest or '')[:12]}) (fix: --allow-suite-change pairs tasks by their digest "
                         "and lists what was left out)")
    pairs = _agent_pairs(base, cand, agent_map)
    shared, left_out = _pair_units(base, cand, pairs, changed_suite)
    nothing = _nothing_to_compare(base, cand, pairs, shared)
    names = [m for m in (metrics or METRICS) if m in METRICS]
    weights = dict(base.weights.categories)
    figures = _metrics(shared, names, weights)
    by_agent: dict[str, dict[str, MetricDelta]] = {}
    for agent, cagent in pairs.items():
        sub = [(b, c) for b, c in shared if b.agent == agent]
        if sub:  # one pair's subset is the whole shared set: its figures are the same, not recomputed
            by_agent[f"{agent}={cagent}" if agent != cagent else agent] = figures if len(sub) == len(shared) else (
                _metrics(sub, names, weights))

    gates = GatePair(baseline=base.security.gate, candidate=cand.security.gate)
    checks, failed = [], []
    for th in thresholds or []:
        if th.metric == "gate":
            tripped = gates.candidate != "PASSED"
            checks.append(GateCheck(threshold="gate", reads="gate", scope="candidate", value=None, tripped=tripped,
                                    why=f"the candidate's security gate is {gates.candidate}"))
            if tripped:
                failed.append(f"gate: candidate security gate {gates.candidate}")
            continue
        if th.metric not in figures:
            continue
        for scope, ms in [("all", figures), *by_agent.items()]:
            chk = th.check(scope, ms[th.metric])
            checks.append(chk)
            if chk.tripped:
                failed.append(f"{th} ({scope}): {chk.why}")
    notes = []
    if changed_suite:
        notes.append("the runs are of different suites: units are paired by task digest; changed tasks are left out")
    if base.weights.categories != cand.weights.categories:
        notes.append("category weights differ between the runs; the baseline's frozen weights are used")
    for side, doc in (("baseline", base), ("candidate", cand)):
        if doc.isolation.warning:
            notes.append(f"{side}: {doc.isolation.warning}")
        notes += [f"{side}: {flag}" for flag in (doc.measured.flags if doc.measured else [])]
    return Comparison(
        baseline=RunRef(run_id=base.run_id, rules_digest=base.rules_digest, suite=base.suite),
        candidate=RunRef(run_id=cand.run_id, rules_digest=cand.rules_digest, suite=cand.suite),
        agent_pairs=pairs, shared_units=len(shared), paired_by="task_digest" if changed_suite else "task",
        left_out=left_out, method=METHOD, metrics=figures, by_agent=by_agent, security=gates, notes=notes,
        thresholds=[str(t) for t in thresholds or []], checks=checks, flipped=_flips(shared), failed=failed,
        regressed=bool(failed), nothing_to_compare=nothing,
    )


def compare_agents(doc: ScoreDocument, *, metrics: Iterable[str] | None = None) -> list[Comparison]:
    """Agent against agent inside one run: the paired differences of every pair of its agents
    (the second minus the first, on the tasks both were scored on), with the compare machinery."""
    out = []
    for a, b in combinations(sorted(doc.agents), 2):
        cmp = compare_scores(doc, doc, agent_map={a: b}, metrics=metrics)
        # the document is both sides: keep A's units as the baseline side, B's as the candidate side
        kept = [x for x in cmp.left_out
                if (x.agent == a and x.why != UNPAIRED_CANDIDATE) or (x.agent == b and x.why == UNPAIRED_CANDIDATE)]
        out.append(cmp.model_copy(update={"left_out": kept, "notes": []}))
    return out


def _metrics(shared: list[Pair], names: list[str], weights: dict[str, float]) -> dict[str, MetricDelta]:
    """Each metric's paired figures over ``shared``; their bootstraps taken together, so the metrics
    of one shape draw their indices once (:func:`~assay.score.stats.paired_bootstraps`: each interval
    the one it gives alone)."""
    parts = {name: _deltas(shared, METRICS[name][0]) for name in names}
    # one pair has no interval: its bootstrap is the difference itself, which would read as certain
    boot = [name for name, (_b, _c, deltas) in parts.items() if sum(len(v) for v in deltas.values()) > 1]
    cis = dict(zip(boot, paired_bootstraps([parts[name][2] for name in boot], weights,
                                           resamples=BOOTSTRAP_RESAMPLES, seed=BOOTSTRAP_SEED)))
    return {name: _metric_delta(*parts[name], cis.get(name), METRICS[name][1], weights) for name in names}


def _deltas(shared: list[Pair], field: str) -> tuple[dict[str, list[float]], ...]:
    """(baseline values, candidate values, candidate - baseline) by category, of the pairs where both
    sides have a value."""
    by_cat_b: dict[str, list[float]] = {}
    by_cat_c: dict[str, list[float]] = {}
    deltas: dict[str, list[float]] = {}
    for br, cr in shared:
        bv, cv = _unit_value(br, field), _unit_value(cr, field)
        if bv is None or cv is None:
            continue
        cat = br.category
        by_cat_b.setdefault(cat, []).append(bv)
        by_cat_c.setdefault(cat, []).append(cv)
        deltas.setdefault(cat, []).append(cv - bv)
    return by_cat_b, by_cat_c, deltas


def _metric_delta(by_cat_b: dict[str, list[float]], by_cat_c: dict[str, list[float]], deltas: dict[str, list[float]],
                  ci: tuple[float, float] | None, higher_better: bool, weights: dict[str, float]) -> MetricDelta:
    def macro(d: dict[str, list[float]]) -> float | None:
        return weighted_mean({c: sum(v) / len(v) for c, v in d.items() if v}, weights)

    bval, cval = macro(by_cat_b), macro(by_cat_c)
    delta = None if bval is None or cval is None else cval - bval
    flat = [d for v in deltas.values() for d in v]
    p_sign = sign_test(flat)
    moved = ci is not None and (ci[0] > 0 or ci[1] < 0) and p_sign < 0.05
    direction = None
    if moved and delta is not None:
        direction = "improved" if (delta > 0) == higher_better else "regressed"
    return MetricDelta(baseline=bval, candidate=cval, delta=delta, ci=ci, p_sign_test=p_sign, units=len(flat),
                       higher_is_better=higher_better, moved_beyond_noise=moved, direction=direction)
