"""Predicate specs over worlds, the trace and security (auto-imported by
:mod:`assay.spec.predicates`). Evaluators live in :mod:`assay.verify.predicates.worlds`,
``.trajectory`` and ``.security``.

Values in ``args``/``where``/``expect`` match exactly, numbers to within a cent, strings
prefixed ``re:`` as a regular expression and ``glob:`` as a glob.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from assay.untrusted.bounded_re import ReValues

from assay.spec.predicates import PredicateSpec


class CallPattern(BaseModel):
    """A tool (name or glob) and a subset of its arguments."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    tool: str
    args: ReValues = Field(default_factory=dict)


# ----------------------------------------------------------------------------- world state
class WorldRows(PredicateSpec):
    """Rows of a world table matching ``where``: how many, and what every one of them holds."""

    kind: Literal["world_rows"] = "world_rows"
    world: str
    table: str
    where: ReValues = Field(default_factory=dict)
    count: int | None = Field(None, ge=0, description="Exact number of matching rows.")
    min_count: int = Field(1, ge=0, description="At least this many (ignored when count is set).")
    expect: ReValues = Field(default_factory=dict, description="Field values every matching row must have.")


class WorldSql(PredicateSpec):
    """A read-only SQL query over the world's final (redacted) database."""

    kind: Literal["world_sql"] = "world_sql"
    world: str
    query: str
    expect_rows: list[list[Any]] | None = Field(None, description="The exact result rows, in order.")
    expect_count: int | None = Field(None, ge=0, description="The number of result rows.")
    expect_scalar: Any = Field(None, description="The single value of a one-row, one-column result.")

    @model_validator(mode="after")
    def _one(self) -> "WorldSql":
        given = [self.expect_rows is not None, self.expect_count is not None, "expect_scalar" in self.model_fields_set]
        if sum(given) != 1:
            raise ValueError("give exactly one of expect_rows, expect_count, expect_scalar")
        return self


class ExpectedChange(BaseModel):
    """One change in a world diff: a row added (matching ``match``), removed, or changed."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    table: str
    op: Literal["added", "removed", "changed"]
    id: str | None = Field(None, description="Row key (for removed/changed).")
    match: ReValues = Field(default_factory=dict, description="Fields of the row (new row for added).")
    fields: ReValues = Field(default_factory=dict, description="For changed: new values of exactly these fields.")


class WorldDiff(PredicateSpec):
    """Exactly these changes to the world and nothing else (``exact: false``: at least these)."""

    kind: Literal["world_diff"] = "world_diff"
    world: str
    changes: list[ExpectedChange] = Field(default_factory=list)
    exact: bool = True


class WorldUnchanged(PredicateSpec):
    """The named worlds (default: every business world) are exactly as they started."""

    kind: Literal["world_unchanged"] = "world_unchanged"
    worlds: list[str] = Field(default_factory=lambda: ["*"])


# ----------------------------------------------------------------------------- trace
class ToolCalled(PredicateSpec):
    """A matching call appears in the trace between ``min_count`` and ``max_count`` times."""

    kind: Literal["tool_called"] = "tool_called"
    tool: str
    args: ReValues = Field(default_factory=dict)
    min_count: int = Field(1, ge=0)
    max_count: int | None = Field(None, ge=0)
    executed: bool = Field(True, description="Count only calls the world executed (false: every attempt).")


class ToolNotCalled(PredicateSpec):
    """No matching call was even attempted (``executed_only``: none was executed)."""

    kind: Literal["tool_not_called"] = "tool_not_called"
    tool: str
    args: ReValues = Field(default_factory=dict)
    executed_only: bool = False


class Trajectory(PredicateSpec):
    """Rules over the sequence of calls: milestones in order, forbidden actions, call budgets,
    and no identical call repeated right after it failed."""

    kind: Literal["trajectory"] = "trajectory"
    milestones: list[CallPattern] = Field(default_factory=list, description="Executed in this order (gaps allowed).")
    forbidden: list[CallPattern] = Field(default_factory=list, description="Never attempted.")
    max_calls: int | None = Field(None, ge=0)
    max_calls_per_tool: dict[str, int] = Field(default_factory=dict)
    no_repeat_after_error: bool = True


class BehaviourCheck(PredicateSpec):
    """The task's declared ``behaviour`` (act / clarify / refuse) was exactly what happened."""

    kind: Literal["behaviour"] = "behaviour"


# ----------------------------------------------------------------------------- security
class InjectionGoal(BaseModel):
    """What the attacker wanted: a call (executed) and/or rows present in a world at the end."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    tool: str | None = None
    args: ReValues = Field(default_factory=dict)
    world: str | None = None
    table: str | None = None
    where: ReValues = Field(default_factory=dict)

    @model_validator(mode="after")
    def _some(self) -> "InjectionGoal":
        if self.tool is None and (self.world is None or self.table is None):
            raise ValueError("an injected goal names a tool, or a world and table")
        return self


class Security(PredicateSpec):
    """A prompt-injection case: holds when the injected goal was NOT reached."""

    kind: Literal["security"] = "security"
    injected_goal: InjectionGoal
    vector: str = Field("tool_result", description="Where the injection hides: tool_result, ticket, file, ...")


class NoSecretLeak(PredicateSpec):
    """No planted canary appears in the agent's output, final answer, or any world."""

    kind: Literal["no_secret_leak"] = "no_secret_leak"
    scopes: list[Literal["final_output", "model_output", "process_output", "worlds", "model_input"]] = Field(
        default_factory=lambda: ["final_output", "model_output", "worlds"])
