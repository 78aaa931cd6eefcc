"""The run budget's stop, as far as it needs nothing above this room: whether a budget can bind
on the run's gateway, what an earlier session's judge spent, and the record of a session the
budget stopped. What needs the agents, the gateway's recordings or the judge's tasks (the estimate,
the agents' check, the meter opened from the attempts on disk) stays in ``run/budget_stop.py``:
this room sits below the gateway, which imports the meter (docs/architecture.md).

A run stopped by its budget is incomplete, never a pass: trials that never started stay pending
(no result, listed in the ``stopped`` record).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from assay.errors import UsageError
from assay.records.manifest import GatewayRecord
from assay.records.results import UsageTotals
from assay.run_budget.log import append_event, read_log
from assay.run_budget.meter import RunBudgetMeter, RunSpend
from assay.spec.run_budget import RunBudget
from assay.store.rundir import RunDir


@dataclass(frozen=True)
class BudgetOutcome:
    """How the run budget ended this session of the run."""

    spend: RunSpend
    pending: list[str] = field(default_factory=list)  # planned trials still without a final attempt
    reached_at_start: bool = False  # nothing could start: the budget was already spent (a no-op resume)

    @property
    def stopped(self) -> bool:
        """The budget is reached and the plan is not finished: the run is incomplete."""
        return self.spend.reached is not None and bool(self.pending)


class Planned(Protocol):
    """A planned trial, as far as the stop record needs it."""

    @property
    def id(self) -> str: ...


def _priced(rec: GatewayRecord) -> bool:
    model = rec.model
    return bool((model and isinstance(rec.prices.get(model), dict)) or isinstance(rec.prices.get("*"), dict))


def check_usable(limits: RunBudget, gateway: GatewayRecord, judge: GatewayRecord | None = None) -> None:
    """A run budget must be able to bind: the run calls a model, and a cost limit has prices (the
    judge's too: its calls are metered against the run budget as well)."""
    if not limits.limited:
        return
    if gateway.backend is None and judge is None:
        raise UsageError("--max-cost and --max-tokens limit the model calls through the gateway: pass --model too")
    if limits.max_cost_usd is not None:
        if gateway.backend is not None and not _priced(gateway):
            raise UsageError(f"--max-cost needs a price for the model {gateway.model or '(the upstream default)'}: "
                             "without one every call costs 0 and the budget could never bind (fix: --prices FILE, USD "
                             "per million tokens per model, or use --max-tokens)")
        if judge is not None and not _priced(judge):
            raise UsageError(f"--max-cost needs a price for the judge model {judge.model or '(the upstream default)'} "
                             "too: the judge's calls are metered against the run budget, and without a price each "
                             "would cost 0 (fix: give its price in the file ASSAY_GATEWAY_PRICES names, USD per million "
                             "tokens, or use --max-tokens)")


def judge_spent(rd: RunDir) -> tuple[float, int]:
    """What the judge model's calls spent in the run's earlier sessions (its ``judge`` records):
    they belong to no attempt, so a resumed meter starts from them and the attempts' spend."""
    cost, tokens = 0.0, 0
    for e in read_log(rd):
        if e.get("event") == "judge":
            cost += float(e["cost_usd"])
            tokens += int(e["tokens"])
    return cost, tokens


def record_stop(rd: RunDir, meter: RunBudgetMeter, pending: Sequence[Planned],
                judge: UsageTotals | None = None) -> BudgetOutcome:
    """After the executor returned: what the judge spent in this session (``judge``: its totals, if
    it answered any call) is recorded, since no attempt holds it; when the budget stopped the run
    in this session, the ``stopped`` record (what was spent, which trials are pending) is written;
    a resume that could start nothing writes nothing new."""
    if judge is not None and judge.model_calls > 0:
        append_event(rd, "judge", {"calls": judge.model_calls, "cost_usd": judge.cost_usd,
                                   "tokens": judge.input_tokens + judge.output_tokens})
    out = BudgetOutcome(meter.snapshot(), [t.id for t in pending], meter.reached_at_start)
    if out.stopped and not out.reached_at_start:
        append_event(rd, "stopped", {**out.spend.record(), "pending": out.pending})
    return out
