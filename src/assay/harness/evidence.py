"""Evidence helpers every room shares: how a world call reaches an agent through its shell, and
how tool calls are counted once whatever the exposure (native, MCP, shim)."""

from __future__ import annotations

from typing import Any

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


def count_tool_calls(events: list[TraceEvent]) -> int:
    """Tool calls of an attempt, each counted once whatever the exposure: a world call counts as
    the world recorded it, not again as the agent's copy of it or as the shell call carrying it."""
    n = 0
    for ev in events:
        if ev.kind is not EventKind.tool_call:
            continue
        if ev.source is not Source.world and ("." in str(ev.data.get("name", "")) or is_shim_carrier(ev)):
            continue
        n += 1
    return n
