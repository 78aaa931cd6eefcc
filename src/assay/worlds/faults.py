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
from typing import Any, Awaitable, Callable

from assay.spec.task import TaskSpec
from assay.spec.tool_faults import EXECUTED_KINDS, ProcessFaultKind, ProcessFaultSpec, ToolFaultKind, ToolFaultSpec
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


def process_plan(spec: TaskSpec, variant: str) -> list[ProcessFaultSpec]:
    v = spec.variant(variant)
    return list(v.process_faults) if v is not None else []


#: what the trial engine hands the dispatcher: kill the agent for this fault entry (on the engine's
#: loop), return once it is dead; False when there was no agent to kill
Interrupt = Callable[[dict[str, Any]], Awaitable[bool]]


class LateApproval(ToolError):
    """The agent that asked is killed while its request is pending; the answer comes later."""


class FaultingDispatcher(Dispatcher):
    """A dispatcher that injects one attempt's tool fault plan."""

    def __init__(self, *, faults: list[ToolFaultSpec], process_faults: list[ProcessFaultSpec] | None = None,
                 **kw: Any):
        super().__init__(**kw)
        self.plan = list(faults)
        self._counts = [0] * len(self.plan)
        self._flock = threading.Lock()
        self.dropped: set[str] = set()
        self.fault_log: list[dict[str, Any]] = []
        self.process_plan = list(process_faults or [])
        self._pcounts = [0] * len(self.process_plan)
        self.process_log: list[dict[str, Any]] = []
        self.interrupt: Interrupt | None = None  # set by the trial engine (run/attempt/process_faults.py)
        self.orphans: dict[tuple[str, str], str] = {}  # (tool, canonical args) -> request id left pending

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

    # ------------------------------------------------------------------ process faults
    def _pmatch(self, name: str, kinds: frozenset[ProcessFaultKind]) -> ProcessFaultSpec | None:
        hit = None
        with self._flock:
            for i, f in enumerate(self.process_plan):
                if f.kind in kinds and tool_matches(f.tool, name):
                    self._pcounts[i] += 1
                    if hit is None and self._pcounts[i] == f.on_call:
                        hit = f
        return hit

    async def _process_fault(self, fault: ProcessFaultSpec, call_id: str, name: str, channel: str,
                             **evidence: Any) -> None:
        """Record the fault (trace and extra), then have the engine kill the agent; the answer of
        the call is never delivered (the agent that would read it is gone)."""
        entry = {"call_id": call_id, "name": name, "kind": fault.kind.value, "channel": channel, **evidence}
        with self._flock:
            self.process_log.append(entry)
        self.trace.emit(Source.world, EventKind.fault_injected, entry)
        self.dropped.add(call_id)
        applied = False
        if self.interrupt is not None:
            try:
                applied = await self.interrupt(entry)
            except Exception as e:  # noqa: BLE001 - a failed kill is recorded, never hidden
                entry["error"] = f"{type(e).__name__}: {e}"
        entry.setdefault("applied", applied)

    async def call(self, name: str, arguments: Any, channel: str = "native") -> dict[str, Any]:
        answer = await super().call(name, arguments, channel)
        kinds = frozenset({ProcessFaultKind.agent_killed, ProcessFaultKind.sandbox_restart})
        fault = self._pmatch(name, kinds) if self.process_plan and answer.get("call_id") not in self.dropped else None
        if fault is not None:  # the call ran and its result is in the trace; the agent never reads it
            await self._process_fault(fault, answer["call_id"], name, channel, executed=self._executed(answer))
        return answer

    def _executed(self, answer: dict[str, Any]) -> bool:
        call_id = answer.get("call_id")
        with self._lock:
            return any(c["call_id"] == call_id and c["executed"] for c in self.log.calls)

    async def _approval(self, call_id: str, name: str, args: dict[str, Any], rec: dict[str, Any]) -> str:
        key = (name, canonical(self.redactor.data(args)))
        orphan = self.orphans.pop(key, None)
        if orphan is not None:  # the restarted agent asks again: it joins the request left pending
            return await super()._approval(call_id, name, args, rec, join=orphan)
        fault = self._pmatch(name, frozenset({ProcessFaultKind.late_approval})) if self.process_plan else None
        if fault is None:
            return await super()._approval(call_id, name, args, rec)
        req, _ = self.open_request(call_id, name, args)
        self.orphans[key] = req.id
        self.start_late_decision(req, args)
        await self._process_fault(fault, call_id, name, rec.get("channel", ""), request_id=req.id)
        raise LateApproval("the agent ended before the approval was answered (injected late approval)")

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
    """The attempt's dispatcher, with its variant's fault plans (empty for most variants)."""
    return FaultingDispatcher(faults=fault_plan(spec, variant), process_faults=process_plan(spec, variant),
                              spec=spec, **kw)


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
