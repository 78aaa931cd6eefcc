"""The run budget in the runner: checked and estimated before the run, its meter opened from what
the run directory already spent, a new limit on resume recorded. What needs nothing above the
``run_budget`` room (the stop record, the judge's earlier spend, whether a budget can bind) is in
``run_budget/stop.py``; this module holds what needs the agents, the gateway and the judge.

A run stopped by its budget is incomplete, never a pass: trials that never started stay pending
(no result, listed in the ``stopped`` record), attempts cut by it are ``infra_error`` /
``run_budget`` and retried on resume without using up retries (:mod:`assay.run.executor`).
"""

from __future__ import annotations

import json
from typing import Any

from assay.agents.base import AgentAdapter
from assay.errors import UsageError
from assay.gateway.accounting import call_cost
from assay.gateway.neutral import Usage
from assay.gateway.session import RECORDING_NAME
from assay.judge.uses import is_judged
from assay.records.manifest import GatewayRecord, RunManifest
from assay.records.results import UsageTotals
from assay.run.plan import PlannedTrial, parse_trial_id
from assay.run_budget.log import append_event, limits_in_force
from assay.run_budget.meter import RunBudgetMeter, estimate_run, spent_by
from assay.run_budget.stop import check_usable, judge_spent
from assay.spec.load import LoadedSuite
from assay.spec.run_budget import RunBudget, RunBudgetRecord
from assay.store.rundir import RunDir


#: agent kinds that call no model at all (the task's reference solution, nothing): a run budget
#: holds for them trivially
MODEL_FREE_KINDS = frozenset({"nop", "oracle"})


def unmetered_agents(adapters: dict[str, AgentAdapter]) -> list[str]:
    """Agents whose model calls, if they make any, do not go through assay's gateway: no run
    budget can see, let alone bound, what they spend."""
    return sorted(name for name, a in adapters.items() if not a.needs_gateway and a.kind not in MODEL_FREE_KINDS)


def _check_agents(limits: RunBudget, adapters: dict[str, AgentAdapter] | None) -> None:
    """A run budget is refused for a run with an agent it cannot meter, rather than claiming a bound
    it cannot hold."""
    blind = unmetered_agents(adapters or {}) if limits.limited else []
    if blind:
        raise UsageError(f"--max-cost/--max-tokens bound the model calls that go through assay's gateway, and "
                         f"agent(s) {blind} do not use it: what they spend could be neither metered nor stopped (fix: "
                         "set needs_gateway: true in the agent's YAML so its model calls go through the gateway, or "
                         "run those agents without a run budget)")


def _gateway_agents(adapters: dict[str, AgentAdapter]) -> set[str]:
    return {name for name, a in adapters.items() if a.needs_gateway}


def budget_record(limits: RunBudget | None, suite: LoadedSuite, plan: list[PlannedTrial],
                  adapters: dict[str, AgentAdapter], gateway: GatewayRecord,
                  judge: GatewayRecord | None = None) -> RunBudgetRecord | None:
    """The run budget and its estimate, bound into the manifest (None: no run budget)."""
    if limits is None or not limits.limited:
        return None
    check_usable(limits, gateway, judge)
    _check_agents(limits, adapters)
    users = _gateway_agents(adapters)
    budgets = [(t.task_id, suite.task(t.task_id).spec.budget) for t in plan if t.agent in users]
    judged = sum(1 for t in plan if is_judged(suite.task(t.task_id).spec))
    estimate = estimate_run(budgets, gateway.prices, gateway.model)
    return RunBudgetRecord(limits=limits, estimate=estimate.model_copy(
        update={"judged_trials": judged if judge is not None else 0}))


def change_limits(rd: RunDir, manifest: RunManifest, new: RunBudget | None,
                  adapters: dict[str, AgentAdapter] | None = None) -> None:
    """``--resume`` with a run budget: the limits given replace those in force (a limit not given
    stays), a change is recorded in the budget log (the manifest stays as sealed); the same
    limits record nothing."""
    if new is None:
        return
    old = limits_in_force(rd, manifest)
    new = old.model_copy(update=new.model_dump(exclude_none=True))
    check_usable(new, manifest.gateway, manifest.judge)
    _check_agents(new, adapters)
    if new != old:
        append_event(rd, "changed", {"from": old.model_dump(), "to": new.model_dump()})


def spent_on_disk(rd: RunDir, manifest: RunManifest, agents: set[str]) -> tuple[float, int]:
    """What the run already spent (cost, tokens) for ``agents``: each finished attempt's accounted
    usage, and for an attempt the runner died in (no result yet, or closed as ``interrupted``) the
    calls its gateway recording holds, priced by the manifest's table."""
    finished = [r for r in rd.iter_results() if not r.partial]
    cost, tokens = spent_by(finished, agents)
    done = {(r.trial_id, r.attempt) for r in finished}
    gw = manifest.gateway
    for tid in manifest.plan.trials:
        if parse_trial_id(tid).agent not in agents:
            continue
        for n in rd.attempts_of(tid):
            rec = rd.attempt_dir(tid, n) / RECORDING_NAME
            if (tid, n) in done or not rec.is_file():
                continue
            for line in rec.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    reply = json.loads(line)["reply"]
                    u = reply.get("usage") or {}
                    usage = Usage(int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0)),
                                  int(u.get("cached_tokens", 0)))
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # a torn last line of a killed runner
                cost += call_cost(gw.prices, str(reply.get("model") or gw.model or ""), usage, gw.model)
                tokens += usage.input_tokens + usage.output_tokens
    return cost, tokens


def open_meter(rd: RunDir, manifest: RunManifest, adapters: dict[str, AgentAdapter], events: Any) -> RunBudgetMeter | None:
    """The run's meter, starting from what the attempts on disk spent (None: no run budget).
    Reaching the limit is announced to the run's plugins (``assay_run_budget``)."""
    limits = limits_in_force(rd, manifest)
    if not limits.limited:
        return None
    cost, tokens = spent_on_disk(rd, manifest, _gateway_agents(adapters))
    judge_cost, judge_tokens = judge_spent(rd)
    cost, tokens = cost + judge_cost, tokens + judge_tokens
    meter = RunBudgetMeter(limits, cost_usd=cost, tokens=tokens,
                           estimate=manifest.run_budget.estimate if manifest.run_budget else None)
    meter.on_reached(lambda spend: events.notify("assay_run_budget", None, spend=spend))
    return meter


def judge_totals(services: list[Any]) -> UsageTotals | None:
    """What the run's judge service spent (None: the run has no judge), from its own tally."""
    return next((s.spend() for s in services if getattr(s, "name", "") == "judge" and hasattr(s, "spend")), None)
