"""Per-call cost from the manifest's price table, and per-attempt totals and budgets.

Prices are USD per million tokens, per model id (``"*"`` applies to any model)::

    prices: {"assay-scripted": {"input": 1.0, "output": 2.0, "cached": 0.1}}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.gateway.neutral import Usage
from assay.records.results import UsageTotals
from assay.spec.budget import Budget


def call_cost(prices: dict[str, Any], model: str, usage: Usage, fallback_model: str | None = None) -> float:
    """USD for one call: priced by the model that answered, else the configured model, else ``"*"``."""
    table = prices.get(model) or (prices.get(fallback_model) if fallback_model else None) or prices.get("*")
    if not isinstance(table, dict):
        return 0.0
    cached = min(usage.cached_tokens, usage.input_tokens)
    return ((usage.input_tokens - cached) * float(table.get("input", 0))
            + cached * float(table.get("cached", table.get("input", 0)))
            + usage.output_tokens * float(table.get("output", 0))) / 1_000_000


@dataclass
class Tally:
    """What one attempt has spent so far through the gateway."""

    calls: int = 0  # every request that reached a completion route (faulted ones included)
    answered: int = 0  # requests the backend answered (the model calls that count)
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    exceeded: list[str] = field(default_factory=list)

    def add(self, usage: Usage, cost: float) -> None:
        self.answered += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cached_tokens += usage.cached_tokens
        self.cost_usd += cost

    def over(self, budget: Budget) -> tuple[str, float, float] | None:
        """The first budget already spent (name, limit, used), or None: checked before each call."""
        checks = (("model_calls", budget.model_calls, self.answered),
                  ("tokens", budget.tokens, self.input_tokens + self.output_tokens),
                  ("cost_usd", budget.cost_usd, self.cost_usd))
        for name, limit, used in checks:
            if limit is not None and used >= limit:
                return name, float(limit), float(used)
        return None

    def totals(self) -> UsageTotals:
        return UsageTotals(model_calls=self.answered, input_tokens=self.input_tokens, output_tokens=self.output_tokens,
                           cached_tokens=self.cached_tokens, cost_usd=round(self.cost_usd, 10), turns=self.answered)
