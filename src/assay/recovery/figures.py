"""Recovery figures of a run: how agents fare when the tools fail, from the result files alone.

Per agent (and per fault kind): the **recovery success rate** (faulted trials that still strictly
pass, Wilson 95 %), the **duplicate side effects** the faulted trials left (and the base trials,
for comparison), and the **extra cost, tool calls and wall time** (of the agent phase: sandbox setup and verification
are not the agent's doing) the fault caused, each paired
against the base trial of the same task, agent and repetition (mean difference with a bootstrap
interval). Only pairs where both sides reached a verdict enter a difference.

A trial is a fault-plan trial when its final attempt records ``extra["tool_fault_plan"]``; it is
*faulted* when a fault actually fired (``extra["tool_faults"]`` not empty). A plan whose fault
never fired (the agent never called the tool) is counted as ``not_exercised``, never as a
recovery. A trial of a non-base variant without a verdict and without that record cannot be
classified and is counted under ``unclassified`` (an infrastructure error before the worlds
opened), never dropped silently.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.score.stats import paired_bootstrap, wilson
from assay.score.trials import fold_trial, group_by_trial
from assay.spec.results import AttemptResult

ALL = "all"


@dataclass
class TrialRecord:
    task: str
    variant: str
    agent: str
    repetition: int
    strict_pass: bool
    verdict: bool
    planned: bool  # a fault-plan trial
    kinds: list[str]  # faults that fired in the final attempt
    duplicates: int
    cost_usd: float
    tool_calls: int
    wall_s: float  # the agent phase of the final attempt (sandbox setup and verifier excluded)


@dataclass
class RecoveryRow:
    agent: str
    kind: str
    faulted: int = 0
    recovered: int = 0
    rate: float | None = None
    interval: tuple[float, float] = (0.0, 1.0)
    not_exercised: int = 0
    duplicates: int = 0
    base_duplicates: int = 0
    pairs: int = 0
    extra_cost_usd: float | None = None
    extra_cost_interval: tuple[float, float] | None = None
    extra_tool_calls: float | None = None
    extra_wall_s: float | None = None
    extra_wall_interval: tuple[float, float] | None = None


@dataclass
class RecoveryFigures:
    rows: list[RecoveryRow] = field(default_factory=list)
    unclassified: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"figures": "recovery", "version": 1, "rows": [asdict(r) for r in self.rows],
                "unclassified": self.unclassified}

    def row(self, agent: str, kind: str = ALL) -> RecoveryRow:
        return next(r for r in self.rows if r.agent == agent and r.kind == kind)


def trial_record(attempts: list[AttemptResult]) -> TrialRecord:
    """The facts recovery needs from one trial (its final attempt; cost summed over attempts)."""
    facts = fold_trial(attempts)
    last = max(attempts, key=lambda a: a.attempt)
    extra = last.extra if isinstance(last.extra, dict) else {}
    kinds = sorted({str(f.get("kind")) for f in extra.get("tool_faults") or [] if isinstance(f, dict)})
    return TrialRecord(task=facts.task_id, variant=facts.variant, agent=facts.agent, repetition=facts.repetition,
                       strict_pass=facts.strict_pass, verdict=facts.verdict, planned=bool(extra.get("tool_fault_plan")),
                       kinds=kinds, duplicates=int(extra.get("duplicate_side_effects") or 0),
                       cost_usd=facts.cost_usd, tool_calls=facts.tool_calls,
                       wall_s=last.timings.agent_s if last.timings.agent_s > 0 else facts.wall_s)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _ci(xs: list[float], resamples: int) -> tuple[float, float] | None:
    return paired_bootstrap({"all": xs}, {"all": 1.0}, resamples=resamples) if xs else None


def _fill(row: RecoveryRow, faulted: list[TrialRecord], base: dict[tuple[str, str, int], TrialRecord],
          resamples: int) -> None:
    row.faulted = len(faulted)
    row.recovered = sum(t.strict_pass for t in faulted)
    row.rate = row.recovered / row.faulted if row.faulted else None
    row.interval = wilson(row.recovered, row.faulted)
    row.duplicates = sum(t.duplicates for t in faulted)
    cost, calls, wall = [], [], []
    for t in faulted:
        b = base.get((t.task, t.agent, t.repetition))
        if b is None or not (t.verdict and b.verdict):
            continue
        cost.append(t.cost_usd - b.cost_usd)
        calls.append(float(t.tool_calls - b.tool_calls))
        wall.append(t.wall_s - b.wall_s)
    row.pairs = len(cost)
    row.extra_cost_usd, row.extra_cost_interval = _mean(cost), _ci(cost, resamples)
    row.extra_tool_calls = _mean(calls)
    row.extra_wall_s, row.extra_wall_interval = _mean(wall), _ci(wall, resamples)


def recovery_figures(results: list[AttemptResult], *, resamples: int = 2000) -> RecoveryFigures:
    """The figures from a run's attempt results (ordered by trial, as the run directory yields them)."""
    trials = [trial_record(g) for g in group_by_trial(sorted(results, key=lambda r: (r.trial_id, r.attempt)))]
    out = RecoveryFigures()
    base = {(t.task, t.agent, t.repetition): t for t in trials if t.variant == "base"}
    by_agent: dict[str, list[TrialRecord]] = defaultdict(list)
    for t in trials:
        if t.planned:
            by_agent[t.agent].append(t)
        elif t.variant != "base" and not t.verdict:
            out.unclassified += 1
    for agent in sorted(by_agent):
        planned = by_agent[agent]
        faulted = [t for t in planned if t.kinds]
        base_dups = sum(t.duplicates for t in base.values() if t.agent == agent)
        row = RecoveryRow(agent, ALL, not_exercised=len(planned) - len(faulted), base_duplicates=base_dups)
        _fill(row, faulted, base, resamples)
        out.rows.append(row)
        for kind in sorted({"+".join(t.kinds) for t in faulted}):
            krow = RecoveryRow(agent, kind, base_duplicates=base_dups)
            _fill(krow, [t for t in faulted if "+".join(t.kinds) == kind], base, resamples)
            out.rows.append(krow)
    return out


def recovery_of_run(run_dir: Path | str, *, resamples: int = 2000) -> RecoveryFigures:
    """The figures of a run directory (what ``assay recovery`` prints)."""
    from assay.store.rundir import RunDir

    return recovery_figures(RunDir.open(run_dir).results(), resamples=resamples)



def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _num(x: float | None, ci: tuple[float, float] | None, fmt: str) -> str:
    if x is None:
        return "-"
    return f"{x:{fmt}}" + (f" [{ci[0]:{fmt}}, {ci[1]:{fmt}}]" if ci else "")


def render_markdown(fig: RecoveryFigures) -> str:
    """The figures as a Markdown table (per agent, then per fault kind)."""
    out = ["| agent | fault | recovered | 95% CI | not exercised | duplicates (base) | pairs | extra cost USD | "
           "extra tool calls | extra wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in fig.rows:
        out.append(f"| {r.agent} | {r.kind} | {_pct(r.rate)} ({r.recovered}/{r.faulted}) | "
                   f"[{_pct(r.interval[0])}, {_pct(r.interval[1])}] | {r.not_exercised} | {r.duplicates} ({r.base_duplicates}) | "
                   f"{r.pairs} | {_num(r.extra_cost_usd, r.extra_cost_interval, '+.6f')} | "
                   f"{_num(r.extra_tool_calls, None, '+.2f')} | {_num(r.extra_wall_s, r.extra_wall_interval, '+.2f')} |")
    if fig.unclassified:
        out.append(f"\n{fig.unclassified} trial(s) of non-base variants ended without a verdict before the worlds "
                   "recorded a fault plan: unclassified.")
    return "\n".join(out) + "\n"
