"""Facts read from a trial's trace: tool errors, loops, injected faults, trace completeness.

Only the final attempt's events are read (the attempt that is the trial's result). The trace
is read line by line so a long trace never sits in memory whole.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from assay.score.trials import TraceFacts
from assay.trace.events import EventKind, TraceEvent
from assay.trace.writer import iter_events

#: this many identical consecutive tool calls count as a loop even without an error between them
LOOP_RUN = 3


def _tool_error(data: dict[str, Any]) -> bool:
    code = data.get("exit_code")
    return data.get("ok") is False or (code is not None and code != 0) or bool(data.get("error"))


def _call_key(data: dict[str, Any]) -> str:
    return json.dumps([data.get("name"), data.get("arguments")], sort_keys=True, default=str)


def trace_facts(events: Iterable[TraceEvent], attempt: int) -> TraceFacts:
    """Summarise one attempt's events.

    A *loop* is a tool call identical (name and arguments) to the previous call when that call's
    result was an error, or the third and later of identical consecutive calls.
    """
    f = TraceFacts()
    started = ended = False
    call_ids: set[str] = set()
    answered_ids: set[str] = set()
    unnamed_calls = unnamed_results = 0
    prev_key: str | None = None
    prev_failed = False
    run = 0
    last_call_by_id: dict[str, str] = {}
    for ev in events:
        if ev.attempt != attempt:
            continue
        kind, data = ev.kind, ev.data
        if kind == EventKind.attempt_started:
            started = True
        elif kind == EventKind.attempt_ended:
            ended = True
        elif kind == EventKind.model_response:
            f.model_responses += 1
            usage = data.get("usage") or {}
            if isinstance(usage, dict) and (usage.get("input_tokens", 0) or usage.get("output_tokens", 0)):
                f.model_responses_with_usage += 1
        elif kind == EventKind.tool_call:
            f.tool_calls += 1
            key = _call_key(data)
            run = run + 1 if key == prev_key else 1
            if key == prev_key and (prev_failed or run >= LOOP_RUN):
                f.loops += 1
            prev_key, prev_failed = key, False
            cid = str(data.get("call_id") or "")
            if cid:
                call_ids.add(cid)
                last_call_by_id[cid] = key
            else:
                unnamed_calls += 1
        elif kind == EventKind.tool_result:
            f.tool_results += 1
            failed = _tool_error(data)
            f.tool_errors += failed
            cid = str(data.get("call_id") or "")
            if cid:
                answered_ids.add(cid)
                if last_call_by_id.get(cid) == prev_key:
                    prev_failed = failed
            else:
                unnamed_results += 1
                prev_failed = failed
        elif kind == EventKind.fault_injected:
            f.faults_injected += 1
    f.complete = started and ended
    f.tool_calls_answered = len(call_ids & answered_ids) + min(unnamed_calls, unnamed_results)
    return f


def read_trace_facts(trace_path: Path, attempt: int) -> TraceFacts | None:
    """Facts of one attempt, or None when the trial has no trace file at all."""
    if not trace_path.exists():
        return None
    return trace_facts(iter_events(trace_path), attempt)
