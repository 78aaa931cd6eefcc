"""The calls of an attempt as the verifier reads them from the trace, each named by who recorded it.

World tools (``<world>.<tool>``) count only as the harness recorded them (source ``world``):
what an agent's own session says about them is a claim, not evidence. Other tools (shell,
read, write...) count as the gateway recorded the model issuing them (:func:`call_record`);
the agent's session log, which the model's own shell can rewrite, only adds detail (exit code,
output). Without a gateway record (an agent that calls no model through the harness) the
agent's log is all there is, and every call from it is marked ``recorded_by="agent"``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from assay.harness.evidence import carries_shim
from assay.trace.events import EventKind, Source, TraceEvent
from assay.worlds.matching import subset_matches, tool_matches


@dataclass
class Call:
    seq: int
    call_id: str
    name: str
    arguments: dict[str, Any]
    source: str
    channel: str | None = None
    ok: bool | None = None
    executed: bool = False
    error: str | None = None
    output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    recorded_by: str = "agent"  # world | gateway | agent: who recorded that the call was made

    def matches(self, tool: str, args: dict[str, Any]) -> bool:
        return tool_matches(tool, self.name) and subset_matches(args, self.arguments)

    def brief(self) -> dict[str, Any]:
        return {"seq": self.seq, "call_id": self.call_id, "name": self.name, "arguments": self.arguments,
                "ok": self.ok, "executed": self.executed, "channel": self.channel, "recorded_by": self.recorded_by}


def _args(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
            return parsed if isinstance(parsed, dict) else {"_raw": value}
        except ValueError:
            return {"_raw": value}
    return {}


def is_shim_carrier(call: Call) -> bool:
    """An agent's shell call that runs the world shim: the world records the call it carries."""
    return carries_shim(call.name, call.arguments)


def counted_calls(calls: list[Call]) -> list[Call]:
    """Calls for budgets such as ``max_calls``: a shell call carrying a shim call is not counted
    again beside the world call it carried, so shim and native exposures count the same."""
    return [c for c in calls if not c.extra.get("shim_carrier")]


def calls_from_events(events: list[TraceEvent]) -> list[Call]:
    """Every tool call of the attempt as the trace holds it, in order, with its outcome (world
    calls from the world's record, the others from the agent's log: see :func:`call_record`)."""
    calls: list[Call] = []
    by_id: dict[tuple[str, str], Call] = {}
    for ev in events:
        world = ev.source is Source.world
        if ev.kind is EventKind.tool_call:
            name = str(ev.data.get("name", ""))
            if "." in name and not world:
                continue  # the agent's copy of a world call: the world's own record is the evidence
            c = Call(ev.seq, str(ev.data.get("call_id", "")), name, _args(ev.data.get("arguments")), ev.source.value,
                     ev.data.get("channel"), executed=not world, recorded_by="world" if world else "agent")
            if not world and is_shim_carrier(c):
                c.extra["shim_carrier"] = True
            if not world and "native_arguments" in ev.data:  # as the model sent them, before the adapter renamed
                c.extra["native"] = (str(ev.data.get("native_name") or name), _args(ev.data["native_arguments"]))
            calls.append(c)
            by_id[(ev.source.value, c.call_id)] = c
        elif ev.kind is EventKind.tool_result:
            c2 = by_id.get((ev.source.value, str(ev.data.get("call_id", ""))))
            if c2 is None:
                continue
            ok = ev.data.get("ok")
            if ok is None and ev.data.get("exit_code") is not None:
                ok = ev.data.get("exit_code") == 0
            c2.ok = bool(ok) if ok is not None else None
            c2.error = ev.data.get("error")
            c2.output = str(ev.data.get("output", ""))
            if world:
                c2.executed = bool(ev.data.get("executed"))
    return calls
