"""One trial as a span tree, independent of any SDK: the plan OpenTelemetry export draws.

A trial becomes one trace: the trial span, an attempt span per attempt, phase spans (setup,
agent, verify, laid out from the recorded durations), a span per model call (GenAI semantic
conventions) and per tool call, and the verdict as a ``gen_ai.evaluation.result`` event.

Attributes hold names, counts, timings and verdicts only: never prompts, model text, tool
arguments or outputs, the agent's claim, or anything else that could carry a secret (the trace
is already redacted; this is the second wall). Ids are derived from the run and trial, so
exporting the same run twice produces the same trace and span ids.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from assay.records.results import AttemptResult
from assay.trace.events import EventKind, TraceEvent
from assay.trace.toolcalls import counted_tool_calls

SCORER = "assay.strict_pass"


def trace_id_of(run_id: str, trial_id: str) -> int:
    """The trial's OpenTelemetry trace id (128 bits), stable across exports."""
    return int.from_bytes(hashlib.sha256(f"{run_id}\0{trial_id}".encode()).digest()[:16], "big") or 1


def span_id_of(trace_id: int, key: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{trace_id:032x}\0{key}".encode()).digest()[:8], "big") or 1


@dataclass
class SpanPlan:
    """A span to emit: times in Unix seconds; children are nested spans."""

    key: str
    name: str
    start: float
    end: float
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[str, float, dict[str, Any]]] = field(default_factory=list)
    error: str | None = None  # set: the span's status is ERROR and ``error.type`` names it
    children: list["SpanPlan"] = field(default_factory=list)
    kind: str = "internal"  # OpenTelemetry SpanKind: "client" for a call out to a model

    def walk(self) -> Iterable["SpanPlan"]:
        yield self
        for c in self.children:
            yield from c.walk()


def _model_spans(events: list[TraceEvent], attempt: int) -> list[SpanPlan]:
    requests: dict[int, TraceEvent] = {}
    responses: dict[int, TraceEvent] = {}
    failures: dict[int, TraceEvent] = {}
    for ev in events:
        call = ev.data.get("call")
        if not isinstance(call, int):
            continue
        if ev.kind == EventKind.model_request:
            requests.setdefault(call, ev)
        elif ev.kind == EventKind.model_response:
            responses.setdefault(call, ev)
        elif ev.kind in (EventKind.error, EventKind.fault_injected, EventKind.budget_exceeded):
            failures.setdefault(call, ev)
    out = []
    for call, req in sorted(requests.items()):
        resp, fail = responses.get(call), failures.get(call)
        model = str(req.data.get("model") or "")
        # the provider is who answered (recorded with the reply), not the wire format it was asked in
        provider = str((resp.data.get("provider") if resp is not None else None) or "unknown")
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.system": provider,
                                 "gen_ai.provider.name": provider, "assay.gateway.wire": str(req.data.get("wire") or ""),
                                 "gen_ai.request.model": model, "assay.call": call, "openinference.span.kind": "LLM"}
        if isinstance(req.data.get("max_tokens"), int):
            attrs["gen_ai.request.max_tokens"] = req.data["max_tokens"]
        end, error = req.ts, None
        if resp is not None:
            u = resp.data.get("usage") or {}
            attrs.update({"gen_ai.response.model": str(resp.data.get("model") or model),
                          "gen_ai.usage.input_tokens": int(u.get("input_tokens") or 0),
                          "gen_ai.usage.output_tokens": int(u.get("output_tokens") or 0),
                          "llm.token_count.prompt": int(u.get("input_tokens") or 0),
                          "llm.token_count.completion": int(u.get("output_tokens") or 0),
                          "assay.cost_usd": float(resp.data.get("cost_usd") or 0.0)})
            if resp.data.get("finish_reason"):
                attrs["gen_ai.response.finish_reasons"] = [str(resp.data["finish_reason"])]
            end = resp.ts
        if fail is not None:
            error = str(fail.data.get("kind") or fail.data.get("reason") or fail.data.get("budget") or fail.kind.value)
            end = max(end, fail.ts)
        out.append(SpanPlan(f"a{attempt}.model.{call}", f"chat {model}".strip(), req.ts, end, attrs, error=error,
                            kind="client"))
    return out


def _tool_spans(events: list[TraceEvent], attempt: int) -> list[SpanPlan]:
    results = {str(e.data.get("call_id")): e for e in events if e.kind == EventKind.tool_result and e.data.get("call_id")}
    out = []
    for i, ev in enumerate(counted_tool_calls(events)):  # once each, as the result counts them
        name = str(ev.data.get("name") or "")
        cid = str(ev.data.get("call_id") or "")
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                 "openinference.span.kind": "TOOL"}
        if cid:
            attrs["gen_ai.tool.call.id"] = cid
        res = results.get(cid) if cid else None
        end, error = ev.ts, None
        if res is not None:
            end = max(ev.ts, res.ts)
            if res.data.get("exit_code") is not None:
                attrs["assay.tool.exit_code"] = int(res.data["exit_code"])
            attrs["assay.tool.truncated"] = bool(res.data.get("truncated"))
            if res.data.get("ok") is False or res.data.get("error"):
                error = "tool_error"
        out.append(SpanPlan(f"a{attempt}.tool.{i}", f"execute_tool {name}".strip(), ev.ts, end, attrs, error=error))
    return out


def _attempt_span(r: AttemptResult, events: list[TraceEvent]) -> SpanPlan:
    t = r.timings
    attrs: dict[str, Any] = {"assay.attempt": r.attempt, "assay.end_state": r.end_state.value,
                             "assay.usage.input_tokens": r.usage.input_tokens,
                             "assay.usage.output_tokens": r.usage.output_tokens,
                             "assay.usage.cost_usd": r.usage.cost_usd, "assay.usage.model_calls": r.usage.model_calls,
                             "assay.usage.tool_calls": r.usage.tool_calls, "openinference.span.kind": "CHAIN"}
    if r.reason:
        attrs["assay.reason"] = r.reason[:200]
    if r.retry_reason:
        attrs["assay.retry_reason"] = r.retry_reason[:200]
    span = SpanPlan(f"a{r.attempt}", "assay.attempt", t.started_at, max(t.started_at, t.ended_at), attrs,
                    error=r.end_state.value if r.end_state.value in ("infra_error", "timeout") else None)
    cursor = t.started_at
    for phase, dur in (("setup", t.setup_s), ("agent", t.agent_s), ("verify", t.verify_s)):
        if dur > 0:
            ph = SpanPlan(f"a{r.attempt}.{phase}", f"assay.{phase}", cursor, cursor + dur, {"assay.phase": phase})
            if phase == "agent":  # the GenAI conventions' agent invocation
                ph.name = f"invoke_agent {r.agent}"
                ph.attributes.update({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": r.agent})
            if phase == "verify":
                ph.events = [("assay.predicate", cursor + dur, {"assay.predicate.id": p.id, "assay.predicate.kind": p.kind,
                                                                "assay.predicate.passed": p.passed,
                                                                "assay.predicate.required": p.required})
                             for p in r.predicates]
            span.children.append(ph)
            cursor += dur
    mine = [e for e in events if e.attempt == r.attempt]
    span.children += _model_spans(mine, r.attempt) + _tool_spans(mine, r.attempt)
    for inc in r.incidents:
        span.events.append(("assay.incident", t.ended_at, {"assay.incident.type": inc.type,
                                                            "assay.incident.severity": inc.severity}))
    return span


def trial_plan(attempts: list[AttemptResult], events: list[TraceEvent], *, scorer_version: str) -> SpanPlan:
    """The span tree of one trial (attempts in any order; the last one is the result)."""
    attempts = sorted(attempts, key=lambda a: a.attempt)
    last = attempts[-1]
    children = [_attempt_span(a, events) for a in attempts]
    start = min(c.start for c in children)
    end = max(max(c.end for c in children), start)
    passed = last.strict_pass
    attrs = {"assay.run_id": last.run_id, "assay.trial_id": last.trial_id, "assay.task_id": last.task_id,
             "assay.variant": last.variant, "assay.agent": last.agent, "assay.category": last.category,
             "assay.repetition": last.repetition, "assay.attempts": len(attempts),
             "assay.end_state": last.end_state.value, "openinference.span.kind": "AGENT"}
    verdict = {"gen_ai.evaluation.name": SCORER, "gen_ai.evaluation.score.value": 1.0 if passed else 0.0,
               "gen_ai.evaluation.score.label": last.end_state.value, "assay.evaluator.version": scorer_version,
               "assay.diagnostic_score": float(last.diagnostic_score)}
    return SpanPlan("trial", "assay.trial", start, end, attrs, events=[("gen_ai.evaluation.result", end, verdict)],
                    error=None if last.end_state.value in ("pass", "fail", "skipped") else last.end_state.value,
                    children=children)
