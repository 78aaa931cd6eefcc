"""Facts read from a trial's trace: tool errors, loops, injected faults, trace completeness.

Only the final attempt's events are read (the attempt that is the trial's result). The trace
is read line by line so a long trace never sits in memory whole.
"""

from __future__ import annotations

import json
from dataclasses import replace
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
    fold = FactsFold()
    for ev in events:
        if ev.attempt == attempt:
            fold.add(ev)
    return fold.facts()


class FactsFold:
    """:func:`trace_facts` one event at a time, so one pass over a trace can fold every attempt
    (one fold per attempt number) while the same bytes are hashed."""

    __slots__ = ("f", "started", "ended", "call_ids", "answered_ids", "unnamed_calls", "unnamed_results",
                 "prev_key", "prev_failed", "run", "last_call_by_id")

    def __init__(self) -> None:
        self.f = TraceFacts()
        self.started = self.ended = False
        self.call_ids: set[str] = set()
        self.answered_ids: set[str] = set()
        self.unnamed_calls = self.unnamed_results = 0
        self.prev_key: str | None = None
        self.prev_failed = False
        self.run = 0
        self.last_call_by_id: dict[str, str] = {}

    def add(self, ev: TraceEvent) -> None:
        """Fold one event of this fold's attempt."""
        f, kind, data = self.f, ev.kind, ev.data
        if kind == EventKind.attempt_started:
            self.started = True
        elif kind == EventKind.attempt_ended:
            self.ended = True
        elif kind == EventKind.model_response:
            f.model_responses += 1
            usage = data.get("usage") or {}
            if isinstance(usage, dict) and (usage.get("input_tokens", 0) or usage.get("output_tokens", 0)):
                f.model_responses_with_usage += 1
        elif kind == EventKind.tool_call:
            f.tool_calls += 1
            key = _call_key(data)
            self.run = self.run + 1 if key == self.prev_key else 1
            if key == self.prev_key and (self.prev_failed or self.run >= LOOP_RUN):
                f.loops += 1
            self.prev_key, self.prev_failed = key, False
            cid = str(data.get("call_id") or "")
            if cid:
                self.call_ids.add(cid)
                self.last_call_by_id[cid] = key
            else:
                self.unnamed_calls += 1
        elif kind == EventKind.tool_result:
            f.tool_results += 1
            failed = _tool_error(data)
            f.tool_errors += failed
            cid = str(data.get("call_id") or "")
            if cid:
                self.answered_ids.add(cid)
                if self.last_call_by_id.get(cid) == self.prev_key:
                    self.prev_failed = failed
            else:
                self.unnamed_results += 1
                self.prev_failed = failed
        elif kind == EventKind.fault_injected:
            f.faults_injected += 1

    def facts(self) -> TraceFacts:
        """The attempt's facts so far (the fold stays usable)."""
        f = replace(self.f)
        f.complete = self.started and self.ended
        f.tool_calls_answered = len(self.call_ids & self.answered_ids) + min(self.unnamed_calls, self.unnamed_results)
        return f


def read_trace_facts(trace_path: Path, attempt: int) -> TraceFacts | None:
    """Facts of one attempt, or None when the trial has no trace file at all."""
    if not trace_path.exists():
        return None
    return trace_facts(iter_events(trace_path), attempt)
