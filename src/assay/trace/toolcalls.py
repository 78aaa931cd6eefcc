"""Which recorded tool calls are calls: one rule for every reader of a trace.

A world call reaches the trace up to three times: as the world recorded it, as the agent's own
copy of it (a dotted name such as ``ledger.record_entry``), and as the shell call that ran the
world shim carrying it. The result's count, the OpenTelemetry export and anything built on them
take each call once, as the world recorded it; an export re-imported must not double the calls.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from assay.trace.events import EventKind, Source, TraceEvent

#: the command-line shim that carries world calls through an agent's shell
SHIM_COMMAND = "assay-tool"


def carries_shim(name: str, arguments: Any) -> bool:
    """Whether a tool call (neutral name, arguments) is a shell call running the world shim."""
    command = arguments.get("command", "") if isinstance(arguments, dict) else ""
    return name == "shell" and SHIM_COMMAND in str(command)


def is_shim_carrier(ev: TraceEvent) -> bool:
    """An agent's shell call that only runs the world shim: the world records the call it carries."""
    return carries_shim(str(ev.data.get("name", "")), ev.data.get("arguments"))


def counted_tool_calls(events: Iterable[TraceEvent]) -> Iterator[TraceEvent]:
    """The tool-call events that are calls, each once whatever the exposure: a world call as the
    world recorded it, never again as the agent's copy of it or as the shell call carrying it."""
    for ev in events:
        if ev.kind is not EventKind.tool_call:
            continue
        if ev.source is not Source.world and ("." in str(ev.data.get("name", "")) or is_shim_carrier(ev)):
            continue
        yield ev


def count_tool_calls(events: Iterable[TraceEvent]) -> int:
    """How many calls :func:`counted_tool_calls` keeps."""
    return sum(1 for _ in counted_tool_calls(events))
