"""Tool faults injected by the world service, and the duplicate side effects they provoke.

The variant an attempt runs names its fault plan (``variants: [{id, tool_faults}]``); the
dispatcher counts the calls matching each fault's ``tool`` and hits the Nth one: deterministic,
recorded as a ``fault_injected`` trace event (source world) before anything else happens, and
listed in the attempt's ``extra["tool_faults"]``.

What each kind does to the call (``executed``: whether the world applied it):

    error         refused with an error answer                         not executed
    timeout       answered after delay_s with a timeout error          not executed
    dropped       connection dropped, no answer                        not executed
    slow          answered correctly, delay_s late                     executed
    truncated     answered with the first keep_chars characters        executed
    lost_receipt  connection dropped after the world applied it        executed

A dropped connection is real: the HTTP route starts a response and aborts it, so the agent's
client sees the peer close mid-answer (:class:`DroppedAnswer` on the MCP route).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

from assay.spec.task import TaskSpec
from assay.spec.tool_faults import EXECUTED_KINDS, ToolFaultKind, ToolFaultSpec
from assay.trace.events import EventKind, Source
from assay.worlds.base import ToolError, canonical
from assay.worlds.dispatch import Dispatcher
from assay.worlds.matching import tool_matches


class DroppedAnswer(Exception):
    """The call's answer must never reach the agent: the route drops the connection."""


class _QuietDrops(logging.Filter):
    """An injected drop is the plan, not a server error: keep it out of the server's error log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], DroppedAnswer))


logging.getLogger("uvicorn.error").addFilter(_QuietDrops())


def fault_plan(spec: TaskSpec, variant: str) -> list[ToolFaultSpec]:
    v = spec.variant(variant)
    return list(v.tool_faults) if v is not None else []


class FaultingDispatcher(Dispatcher):
    """A dispatcher that injects one attempt's tool fault plan."""

    def __init__(self, *, faults: list[ToolFaultSpec], **kw: Any):
        super().__init__(**kw)
        self.plan = list(faults)
        self._counts = [0] * len(self.plan)
        self._flock = threading.Lock()
        self.dropped: set[str] = set()
        self.fault_log: list[dict[str, Any]] = []

    def _match(self, name: str) -> ToolFaultSpec | None:
        hit = None
        with self._flock:
            for i, f in enumerate(self.plan):
                if tool_matches(f.tool, name):
                    self._counts[i] += 1
                    if hit is None and f.hits(self._counts[i]):
                        hit = f
        return hit

    def _record(self, call_id: str, name: str, fault: ToolFaultSpec, channel: str) -> None:
        entry = {"call_id": call_id, "name": name, "kind": fault.kind.value, "channel": channel,
                 "executed": fault.kind in EXECUTED_KINDS, "delay_s": fault.delay_s
                 if fault.kind in (ToolFaultKind.slow, ToolFaultKind.timeout) else 0.0}
        with self._flock:
            self.fault_log.append(entry)
        self.trace.emit(Source.world, EventKind.fault_injected, entry)

    async def _run(self, call_id: str, name: str, raw: Any, args: dict[str, Any], channel: str,
                   rec: dict[str, Any]) -> Any:
        fault = self._match(name) if self.plan and name in self.tools and self.allowed(name) and not self.closed else None
        if fault is None:
            return self._replayed(await super()._run(call_id, name, raw, args, channel, rec), rec)
        self._record(call_id, name, fault, channel)
        rec["fault"] = fault.kind.value
        kind = fault.kind
        if kind is ToolFaultKind.error:
            raise ToolError("service unavailable (injected tool fault)")
        if kind is ToolFaultKind.timeout:
            await asyncio.sleep(fault.delay_s)
            raise ToolError(f"the tool timed out after {fault.delay_s:g}s (injected tool fault)")
        if kind is ToolFaultKind.dropped:
            self.dropped.add(call_id)
            raise ToolError("connection dropped (injected tool fault)")
        result = self._replayed(await super()._run(call_id, name, raw, args, channel, rec), rec)
        if kind is ToolFaultKind.slow:
            await asyncio.sleep(fault.delay_s)
        elif kind is ToolFaultKind.truncated:
            result = json.dumps(result, ensure_ascii=False, default=str)[: fault.keep_chars]
        elif kind is ToolFaultKind.lost_receipt:
            self.dropped.add(call_id)
        return result

    @staticmethod
    def _replayed(result: Any, rec: dict[str, Any]) -> Any:
        """A write answered from its idempotency key changed nothing: marked so that behaviour
        judging does not count the safe retry as a second side effect."""
        if isinstance(result, dict) and result.get("replayed") is True:
            rec["replayed"] = True
        return result

    def answer_dropped(self, call_id: str | None) -> bool:
        """Whether the route must drop the connection instead of answering this call."""
        return call_id is not None and call_id in self.dropped


def answer_dropped(dispatcher: Dispatcher, answer: dict[str, Any]) -> bool:
    """For the routes: whether ``answer`` must never be delivered (a dropped connection)."""
    return isinstance(dispatcher, FaultingDispatcher) and dispatcher.answer_dropped(answer.get("call_id"))


def make_dispatcher(spec: TaskSpec, variant: str, **kw: Any) -> FaultingDispatcher:
    """The attempt's dispatcher, with its variant's fault plan (empty for most variants)."""
    return FaultingDispatcher(faults=fault_plan(spec, variant), spec=spec, **kw)


def duplicate_side_effects(diffs: dict[str, dict[str, Any]]) -> int:
    """Rows added twice or more with identical content (the row key aside), over every world:
    what a retry without an idempotency key leaves behind after a lost receipt."""
    dup = 0
    for diff in diffs.values():
        for table in diff.values():
            seen: dict[str, int] = {}
            for row in (table.get("added") or {}).values():
                key = canonical({k: v for k, v in row.items() if k != "id"})
                seen[key] = seen.get(key, 0) + 1
            dup += sum(n - 1 for n in seen.values())
    return dup
