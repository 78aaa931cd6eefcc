"""The run-wide budget at run time: one meter per run, shared by every attempt's gateway session.

Every model call is *admitted* before it is answered and *settled* with its cost and tokens when
the gateway accounts it (all attempts, all agents, thread-safe: sessions run on the gateway's
thread, the executor on the run's). Once what was settled reaches a limit, no call is admitted
again (the gateway answers HTTP 400 ``budget_exceeded``) and the executor starts no new attempt.

The bound this gives (and the tests hold it to): calls admitted before the limit was reached
still finish and are charged, so the run spends less than the limit plus the cost of the calls
in flight at the moment the limit was crossed, the crossing call included. With one call at a
time per attempt that is at most ``jobs`` calls: spent < limit + jobs x the dearest call.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pydantic import ValidationError

from assay.errors import UsageError
from assay.records.results import AttemptResult
from assay.spec.budget import BudgetName
from assay.spec.run_budget import RunBudget, RunEstimate

FIX = "(fix: --max-cost takes a positive number of USD, e.g. 2.5; --max-tokens a positive whole number)"


def run_budget_from_cli(max_cost: float | None, max_tokens: int | None) -> RunBudget | None:
    """The run budget of ``--max-cost``/``--max-tokens`` (None when neither is given); a bad value
    is a usage error naming the option and the fix, before anything is written."""
    if max_cost is None and max_tokens is None:
        return None
    if max_cost is not None and (not math.isfinite(max_cost) or max_cost <= 0):
        raise UsageError(f"--max-cost {max_cost:g}: must be a positive, finite number of USD {FIX}")
    if max_tokens is not None and max_tokens < 1:
        raise UsageError(f"--max-tokens {max_tokens}: must be at least 1 {FIX}")
    try:
        return RunBudget(max_cost_usd=max_cost, max_tokens=max_tokens)
    except ValidationError as e:
        raise UsageError(f"run budget: {e.errors()[0]['msg']} {FIX}") from None


def _price_per_token(prices: dict[str, Any], model: str | None) -> float | None:
    """The dearest USD per token the model may be charged at (input or output), None without a price."""
    table = (prices.get(model) if model else None) or prices.get("*")
    if not isinstance(table, dict):
        return None
    rates = [float(table.get(k, 0) or 0) for k in ("input", "output", "cached")]
    return max(rates) / 1_000_000


def estimate_run(task_budgets: Iterable[tuple[str, Any]], prices: dict[str, Any], model: str | None) -> RunEstimate:
    """The worst case of one attempt of every trial in ``task_budgets`` ((task id, Budget) per
    planned trial whose agent calls the model): a task's ``cost_usd``, else its ``tokens`` at the
    dearest price; its ``tokens`` for the token figure. Retries may add to it."""
    per_token = _price_per_token(prices, model)
    cost, tokens, trials = 0.0, 0, 0
    no_cost: set[str] = set()
    no_tokens: set[str] = set()
    for task_id, b in task_budgets:
        trials += 1
        if b.tokens is None:
            no_tokens.add(task_id)
        else:
            tokens += b.tokens
        bounds = [x for x in (b.cost_usd, b.tokens * per_token if b.tokens is not None and per_token is not None
                              else None) if x is not None]
        if per_token == 0.0:
            bounds.append(0.0)  # a free model: nothing to spend whatever the tokens
        if bounds:
            cost += min(bounds)
        else:
            no_cost.add(task_id)
    return RunEstimate(trials=trials, cost_usd=None if no_cost else round(cost, 10),
                       tokens=None if no_tokens else tokens, unbounded_cost=sorted(no_cost),
                       unbounded_tokens=sorted(no_tokens))


@dataclass(frozen=True)
class RunRefusal:
    """The run budget refused a model call: which limit, and what the run had spent."""

    limit: str  # "cost_usd" | "tokens"
    limit_value: float
    used: float
    budget: BudgetName = BudgetName.run_budget

    def message(self, what: str) -> str:
        unit = "USD" if self.limit == "cost_usd" else "tokens"
        return (f"the run's budget is spent ({self.used:g} of {self.limit_value:g} {unit} over every attempt); "
                f"no more {what}")

    def record(self) -> dict[str, object]:
        return {"budget": self.budget.value, "scope": "run", "limit_of": self.limit, "limit": self.limit_value,
                "used": self.used}


@dataclass(frozen=True)
class RunSpend:
    """A snapshot of the meter (what the progress, the log and the report show)."""

    limits: RunBudget
    cost_usd: float
    tokens: int
    reached: str | None  # the limit that was reached ("cost_usd" | "tokens"), None while within
    calls: int  # calls settled this session
    refused: int  # calls refused this session
    in_flight: int
    crossing_in_flight: int  # calls in flight when the limit was crossed (the crossing one included)
    dearest_call_usd: float
    dearest_call_tokens: int
    estimate: RunEstimate | None = None  # made when the run started (from the manifest)
    reached_at_start: bool = False  # spent before this session began (a resume with the same limit)

    def record(self) -> dict[str, Any]:
        return {"limits": self.limits.model_dump(), "spent": {"cost_usd": round(self.cost_usd, 10), "tokens": self.tokens},
                "reached": self.reached, "calls": self.calls, "refused": self.refused,
                "crossing_in_flight": self.crossing_in_flight,
                "dearest_call": {"cost_usd": round(self.dearest_call_usd, 10), "tokens": self.dearest_call_tokens}}


class RunBudgetMeter:
    """Admits and settles the model calls of a whole run against its :class:`RunBudget`."""

    def __init__(self, limits: RunBudget, *, cost_usd: float = 0.0, tokens: int = 0,
                 estimate: RunEstimate | None = None):
        self.limits = limits
        self.estimate = estimate
        self._cost = float(cost_usd)
        self._tokens = int(tokens)
        self._lock = threading.Lock()
        self._in_flight = 0
        self._crossing = 0
        self._calls = self._refused = 0
        self._dearest = (0.0, 0)
        self._listeners: list[Callable[[RunSpend], None]] = []
        self._reached = self._over()
        self.reached_at_start = self._reached is not None

    def _over(self) -> str | None:
        if self.limits.max_cost_usd is not None and self._cost >= self.limits.max_cost_usd:
            return "cost_usd"
        if self.limits.max_tokens is not None and self._tokens >= self.limits.max_tokens:
            return "tokens"
        return None

    def on_reached(self, listener: Callable[[RunSpend], None]) -> None:
        """Call ``listener`` once, on whatever thread settles the call that reaches a limit."""
        self._listeners.append(listener)

    @property
    def reached(self) -> bool:
        with self._lock:
            return self._reached is not None

    def admit(self) -> RunRefusal | None:
        """Before a model call is answered: refused once a limit is reached, else counted in flight."""
        with self._lock:
            if self._reached is not None:
                self._refused += 1
                if self._reached == "cost_usd":
                    return RunRefusal("cost_usd", float(self.limits.max_cost_usd or 0), round(self._cost, 10))
                return RunRefusal("tokens", float(self.limits.max_tokens or 0), float(self._tokens))
            self._in_flight += 1
            return None

    def settle(self, cost_usd: float, tokens: int) -> None:
        """An admitted call was accounted: charge it (a crossing notifies the listeners once)."""
        with self._lock:
            crossing_now = self._in_flight  # the calls in flight now, this one included
            self._in_flight = max(0, self._in_flight - 1)
            self._calls += 1
            self._cost += cost_usd
            self._tokens += tokens
            self._dearest = (max(self._dearest[0], cost_usd), max(self._dearest[1], tokens))
            crossed = self._reached is None and self._over() is not None
            if crossed:
                self._reached = self._over()
                self._crossing = crossing_now
        if crossed:
            snap = self.snapshot()
            for listener in self._listeners:
                listener(snap)

    def release(self) -> None:
        """An admitted call ended without being accounted (an error answer, a fault)."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)

    def mirror(self, spend: RunSpend) -> None:
        """Take the state of the meter that admits the calls in another process (the Ray
        executor's hub): this one then answers for it; a crossing seen here notifies once."""
        with self._lock:
            crossed = self._reached is None and spend.reached is not None
            self._cost, self._tokens, self._reached = spend.cost_usd, spend.tokens, spend.reached
            self._calls, self._refused, self._in_flight = spend.calls, spend.refused, spend.in_flight
            self._crossing = spend.crossing_in_flight
            self._dearest = (spend.dearest_call_usd, spend.dearest_call_tokens)
        if crossed:
            snap = self.snapshot()
            for listener in self._listeners:
                listener(snap)

    def snapshot(self) -> RunSpend:
        with self._lock:
            return RunSpend(self.limits, self._cost, self._tokens, self._reached, self._calls, self._refused,
                            self._in_flight, self._crossing, *self._dearest, estimate=self.estimate,
                            reached_at_start=self.reached_at_start)


def spent_by(results: Iterable[AttemptResult], agents: set[str]) -> tuple[float, int]:
    """What the attempts on disk spent through the gateway (cost, input+output tokens), for the
    agents that call the model: the meter of a resumed run starts from it."""
    cost, tokens = 0.0, 0
    for r in results:
        if r.agent in agents:
            cost += r.usage.cost_usd
            tokens += r.usage.input_tokens + r.usage.output_tokens
    return cost, tokens


def describe_spend(spend: RunSpend) -> str:
    """What the run spent against its limits, in one line (the progress, the log and the CLI's
    last word all print this one)."""
    parts = []
    if spend.limits.max_cost_usd is not None:
        parts.append(f"${spend.cost_usd:.6g} of ${spend.limits.max_cost_usd:g}")
    if spend.limits.max_tokens is not None:
        parts.append(f"{spend.tokens} of {spend.limits.max_tokens} tokens")
    return "spent " + ", ".join(parts)


def describe_estimate(estimate: RunEstimate, limits: RunBudget) -> list[str]:
    """The estimate printed before the run starts, and a warning when the worst case may not fit."""
    cost = "unbounded" if estimate.cost_usd is None else f"${estimate.cost_usd:.6g}"
    tokens = "unbounded" if estimate.tokens is None else f"{estimate.tokens} tokens"
    lines = [f"run budget {limits.describe()}; worst case by the task budgets and the price table: {cost}, "
             f"{tokens} (one attempt of each of {estimate.trials} trial(s) that call the model; retries may add)"]
    if estimate.judged_trials:
        lines.append(f"the judge model's calls ({estimate.judged_trials} judged trial(s)) are metered against the run "
                     "budget too, but not bounded in this estimate")
    over = estimate.exceeds(limits)
    if over:
        lines.append("the worst case may not fit the run budget (" + "; ".join(over) + "): the run stops cleanly "
                     "when the budget is reached, and `assay run --resume RUN_DIR --max-cost HIGHER` continues it")
    return lines
