"""One budget meter per attempt, shared by every service that can spend the task's budget.

The gateway counts the model turns it answers and the tool calls the model issues; the world
dispatcher counts every world tool call whatever the exposure (native, MCP, shim). A tool call
is counted once: the gateway leaves world calls (their names, or a shell call carrying the
shim) to the dispatcher, which sees each one when it really arrives. Past a budget the service
refuses and says so; the first budget refused is the one that ended the attempt.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.spec.budget import Budget, BudgetName

if TYPE_CHECKING:
    from assay.run_budget.meter import RunBudgetMeter


@dataclass(frozen=True)
class Refusal:
    """A budget that refused something: which one, its limit and what was used."""

    budget: BudgetName
    limit: float
    used: float

    def message(self, what: str) -> str:
        return (f"the attempt's {self.budget.value} budget is spent ({self.used:g} of {self.limit:g}); "
                f"no more {what}")

    def record(self) -> dict[str, object]:
        return {"budget": self.budget.value, "limit": self.limit, "used": self.used}


class BudgetMeter:
    """Turns and tool calls of one attempt against its :class:`Budget` (thread-safe: the world
    server and the gateway run on their own threads). ``run``: the run-wide budget's meter, which
    every attempt of the run shares (:mod:`assay.run_budget.meter`), if the run has one."""

    def __init__(self, budget: Budget, run: RunBudgetMeter | None = None):
        self.budget = budget
        self.run = run
        self.turns = 0
        self.tool_calls = 0
        self._hits: list[BudgetName] = []
        self._lock = threading.Lock()

    @property
    def hits(self) -> list[BudgetName]:
        """Every budget that refused something, in the order they first did."""
        with self._lock:
            return list(self._hits)

    @property
    def ended_by(self) -> BudgetName | None:
        """The budget that ended the attempt: the first one that refused."""
        with self._lock:
            return self._hits[0] if self._hits else None

    def hit(self, name: BudgetName) -> None:
        """Record that ``name`` refused something (also for budgets counted elsewhere)."""
        with self._lock:
            if name not in self._hits:
                self._hits.append(name)

    def _refuse(self, name: BudgetName, limit: float, used: float) -> Refusal:
        if name not in self._hits:
            self._hits.append(name)
        return Refusal(name, limit, used)

    def before_turn(self) -> Refusal | None:
        """Before a model call is answered: refused once ``budget.turns`` turns were answered."""
        with self._lock:
            limit = self.budget.turns
            if limit is not None and self.turns >= limit:
                return self._refuse(BudgetName.turns, limit, self.turns)
            return None

    def charge_turn(self, tool_calls: int) -> Refusal | None:
        """A reply about to be delivered, issuing ``tool_calls`` calls the gateway counts: refused
        (and not counted) when it would take the attempt past ``budget.tool_calls``."""
        with self._lock:
            limit = self.budget.tool_calls
            if limit is not None and tool_calls and self.tool_calls + tool_calls > limit:
                return self._refuse(BudgetName.tool_calls, limit, self.tool_calls)
            self.turns += 1
            self.tool_calls += tool_calls
            return None

    def charge_tool_call(self) -> Refusal | None:
        """One world tool call arriving: refused (and not counted) past ``budget.tool_calls``."""
        with self._lock:
            limit = self.budget.tool_calls
            if limit is not None and self.tool_calls >= limit:
                return self._refuse(BudgetName.tool_calls, limit, self.tool_calls)
            self.tool_calls += 1
            return None
