"""Evaluators over the recorded calls of an attempt: called / not called (with matching
arguments), and trajectory rules (milestones, forbidden actions, call budgets, no identical call
repeated after it failed).

Calls come from the harness's record (:func:`~assay.worlds.call_record.call_record`): the worlds'
and the gateway's. A verdict only the agent's own log could reach (no gateway in the attempt,
a non-world tool) is ``agent_reported``; the absence of a forbidden call is never proven by it
(the predicate fails closed, ``absence_unproven``); what the agent's log claims beyond the
harness's record counts against it, never for it."""

from __future__ import annotations

from typing import Any

from assay.records.results import Trust
from assay.spec.predicates import PredicateSpec
from assay.spec.world_predicates import ToolCalled, ToolNotCalled, Trajectory
from assay.verify.context import Outcome, VerifyContext
from assay.verify.registry import evaluator
from assay.worlds.call_record import CallRecord, call_record
from assay.worlds.calls import Call, counted_calls
from assay.worlds.matching import tool_matches

UNPROVEN = "only the agent's own log records these calls: it cannot prove one was not made"


def _agent_only(rec: CallRecord, patterns: list[str]) -> bool:
    """Whether a verdict over calls matching ``patterns`` rests on the agent's log alone: no
    gateway record, and a pattern that can name a tool other than a world's."""
    return not rec.gateway and any("." not in p for p in patterns)


def _provenance(rec: CallRecord, patterns: list[str]) -> tuple[Trust, tuple[str, ...]]:
    if _agent_only(rec, patterns):
        return Trust.agent_reported, ("agent",)
    return Trust.recorded, ("harness", "agent")


@evaluator("tool_called", trust=Trust.recorded)
async def tool_called(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, ToolCalled)
    rec = call_record(ctx.events)
    hits = [c for c in rec.calls if c.matches(spec.tool, spec.args) and (c.executed or not spec.executed)]
    ok = len(hits) >= spec.min_count and (spec.max_count is None or len(hits) <= spec.max_count)
    ev: dict[str, Any] = {"tool": spec.tool, "count": len(hits), "calls": [c.brief() for c in hits[:20]]}
    claimed = [c.brief() for c in rec.claimed if c.matches(spec.tool, spec.args)]
    if claimed:  # the agent's log says so, the gateway does not: no evidence
        ev["claimed_not_recorded"] = claimed[:20]
    trust, by = _provenance(rec, [spec.tool])
    return Outcome(ok, ev, trust, by)


@evaluator("tool_not_called", trust=Trust.recorded)
async def tool_not_called(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, ToolNotCalled)
    rec = call_record(ctx.events)
    hits = [c for c in rec.against() if c.matches(spec.tool, spec.args) and (c.executed or not spec.executed_only)]
    ev: dict[str, Any] = {"tool": spec.tool, "calls": [c.brief() for c in hits[:20]]}
    trust, by = _provenance(rec, [spec.tool])
    if not hits and trust is Trust.agent_reported:
        ev["absence_unproven"] = UNPROVEN
        return Outcome(False, ev, trust, by)
    return Outcome(not hits, ev, trust, by)


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


@evaluator("trajectory", trust=Trust.recorded)
async def trajectory(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, Trajectory)
    rec = call_record(ctx.events)
    calls = rec.calls
    problems: dict[str, Any] = {}
    pos = 0
    for c in calls:
        if pos < len(spec.milestones) and c.executed and c.matches(spec.milestones[pos].tool, spec.milestones[pos].args):
            pos += 1
    if pos < len(spec.milestones):
        problems["milestones_missing"] = [m.model_dump() for m in spec.milestones[pos:]]
    forbidden = [c.brief() for c in rec.against() if any(c.matches(f.tool, f.args) for f in spec.forbidden)]
    if forbidden:
        problems["forbidden"] = forbidden[:20]
    elif spec.forbidden and _agent_only(rec, [f.tool for f in spec.forbidden]):
        problems["absence_unproven"] = UNPROVEN
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
    patterns = [m.tool for m in spec.milestones] + [f.tool for f in spec.forbidden] + list(spec.max_calls_per_tool)
    if spec.max_calls is not None or spec.no_repeat_after_error:
        patterns.append("*")
    trust, by = _provenance(rec, patterns)
    return Outcome(not problems, {"calls": len(calls), "milestones_reached": pos, **problems}, trust, by)
