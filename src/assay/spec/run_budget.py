"""The run-wide budget: what a whole run may spend on model calls, across every trial and agent
(``assay run --max-cost USD --max-tokens N``), and the estimate made before the run starts.

Both are bound into the manifest when the run starts. A later ``--resume`` with another limit
does not touch the manifest (it is sealed); the change is appended to the run's budget log
(:mod:`assay.run_budget.log`), and the limit in force is the last one recorded there.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class RunBudget(BaseModel):
    """Limits on what the whole run spends through the model gateway (None: no limit)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    max_cost_usd: float | None = Field(None, gt=0, description="USD over every model call of the run (price table).")
    max_tokens: int | None = Field(None, ge=1, description="Input+output tokens over every model call of the run.")

    @property
    def limited(self) -> bool:
        return self.max_cost_usd is not None or self.max_tokens is not None

    def describe(self) -> str:
        parts = ([f"${self.max_cost_usd:g}"] if self.max_cost_usd is not None else []) + (
            [f"{self.max_tokens} tokens"] if self.max_tokens is not None else [])
        return " and ".join(parts) or "no limit"


class RunEstimate(BaseModel):
    """The worst case of one attempt of every planned trial that uses a model, from each task's
    budget and the gateway's price table. ``None``: some trial has no bound on that figure."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    trials: int = Field(0, description="Planned trials whose agent calls the model.")
    cost_usd: float | None = Field(None, description="Sum of the per-attempt cost bounds; null when unbounded.")
    tokens: int | None = Field(None, description="Sum of the per-attempt token bounds; null when unbounded.")
    unbounded_cost: list[str] = Field(default_factory=list, description="Tasks with no cost bound (no cost_usd, "
                                      "and no tokens budget or no price).")
    unbounded_tokens: list[str] = Field(default_factory=list, description="Tasks with no tokens budget.")
    judged_trials: int = Field(0, description="Planned trials whose verifier asks the judge model (--judge-model): "
                               "its calls are metered against the run budget but not bounded by this estimate (a "
                               "judge call's input is the agent's answer, whose size no budget fixes).")

    def exceeds(self, budget: RunBudget) -> list[str]:
        """Why the worst case may not fit in ``budget`` (empty: it fits)."""
        out = []
        if budget.max_cost_usd is not None:
            if self.cost_usd is None:
                out.append(f"cost is unbounded (tasks without a cost bound: {', '.join(self.unbounded_cost)})")
            elif self.cost_usd > budget.max_cost_usd:
                out.append(f"worst-case cost ${self.cost_usd:.6g} > ${budget.max_cost_usd:g}")
        if budget.max_tokens is not None:
            if self.tokens is None:
                out.append(f"tokens are unbounded (tasks without a tokens budget: {', '.join(self.unbounded_tokens)})")
            elif self.tokens > budget.max_tokens:
                out.append(f"worst-case tokens {self.tokens} > {budget.max_tokens}")
        return out


class RunBudgetRecord(BaseModel):
    """The run budget as bound into the manifest when the run started."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    limits: RunBudget
    estimate: RunEstimate
