"""Evaluators over the recorded calls of an attempt: called / not called (with matching
arguments), and trajectory rules (milestones, forbidden actions, call budgets, no identical call
repeated after it failed)."""

from __future__ import annotations

from typing import Any

from assay.spec.predicates import PredicateSpec
from assay.spec.world_predicates import ToolCalled, ToolNotCalled, Trajectory
from assay.verify.context import Outcome, VerifyContext
from assay.verify.registry import evaluator
from assay.worlds.calls import Call, calls_from_events, counted_calls
from assay.worlds.matching import tool_matches


@evaluator("tool_called")
async def tool_called(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, ToolCalled)
    hits = [c for c in calls_from_events(ctx.events) if c.matches(spec.tool, spec.args) and (c.executed or not spec.executed)]
    ok = len(hits) >= spec.min_count and (spec.max_count is None or len(hits) <= spec.max_count)
    return Outcome(ok, {"tool": spec.tool, "count": len(hits), "calls": [c.brief() for c in hits[:20]]})


@evaluator("tool_not_called")
async def tool_not_called(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, ToolNotCalled)
    hits = [c for c in calls_from_events(ctx.events) if c.matches(spec.tool, spec.args)
            and (c.executed or not spec.executed_only)]
    return Outcome(not hits, {"tool": spec.tool, "calls": [c.brief() for c in hits[:20]]})


def _repeats_after_error(calls: list[Call]) -> list[dict[str, Any]]:
    out = []
    for i, c in enumerate(calls):
        if c.ok is not False:
            continue
        for later in calls[i + 1:]:
            if later.name == c.name and later.arguments == c.arguments:
                out.append({"failed": c.brief(), "repeated": later.brief(), "error": c.error})
                break
    return out


@evaluator("trajectory")
async def trajectory(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, Trajectory)
    calls = calls_from_events(ctx.events)
    problems: dict[str, Any] = {}
    pos = 0
    for c in calls:
        if pos < len(spec.milestones) and c.executed and c.matches(spec.milestones[pos].tool, spec.milestones[pos].args):
            pos += 1
    if pos < len(spec.milestones):
        problems["milestones_missing"] = [m.model_dump() for m in spec.milestones[pos:]]
    forbidden = [c.brief() for c in calls if any(c.matches(f.tool, f.args) for f in spec.forbidden)]
    if forbidden:
        problems["forbidden"] = forbidden[:20]
    counted = counted_calls(calls)
    if spec.max_calls is not None and len(counted) > spec.max_calls:
        problems["too_many_calls"] = {"count": len(counted), "max": spec.max_calls}
    for glob, limit in spec.max_calls_per_tool.items():
        n = sum(1 for c in counted if tool_matches(glob, c.name))
        if n > limit:
            problems.setdefault("too_many_calls_per_tool", {})[glob] = {"count": n, "max": limit}
    if spec.no_repeat_after_error:
        rep = _repeats_after_error(calls)
        if rep:
            problems["repeated_after_error"] = rep[:20]
    return Outcome(not problems, {"calls": len(calls), "milestones_reached": pos, **problems})
