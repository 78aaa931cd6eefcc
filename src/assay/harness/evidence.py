"""Evidence helpers every room shares: how a world call reaches an agent through its shell, and
how tool calls are counted once whatever the exposure (native, MCP, shim)."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from assay.harness.wiring import WorldToolContract, function_name

# one rule for every reader of a trace, kept in the trace room (the export reads it too)
from assay.trace.toolcalls import SHIM_COMMAND, carries_shim, count_tool_calls, is_shim_carrier  # noqa: F401

#: how agents name the tools of the world MCP server (named ``assay`` in every agent config):
#: Pi and Hermes ``mcp__assay__ledger_record_entry``, OpenClaw ``assay__ledger-record_entry``,
#: DSH ``mcp__assay__ledger_record_entry_c2b566da174e`` (a rename hash)
_MCP_WORLD = re.compile(r"^(?:mcp__)?assay__(?P<tool>[A-Za-z0-9_.\-]+?)(?:_[0-9a-f]{12})?$")


def world_tool_name(native: str, kinds: Iterable[str]) -> str | None:
    """``ledger.record_entry`` for an agent's name of a world tool reached over MCP, else None.
    ``kinds`` are the world kinds the harness wired in (:class:`WorldToolContract`)."""
    m = _MCP_WORLD.match(native)
    if m is None:
        return None
    tool = m.group("tool")
    for kind in sorted(kinds, key=len, reverse=True):
        for sep in ("_", ".", "-"):
            if tool.startswith(kind + sep) and len(tool) > len(kind) + 1:
                return f"{kind}.{tool[len(kind) + 1:]}"
    return None


def is_world_call(name: str, arguments: Any, world: WorldToolContract | None) -> bool:
    """Whether a tool call a model issued reaches a world: by a world tool's name (as the world,
    the reference agent or an MCP client names it), or as a shell call running the shim. Such a
    call is counted by the world when it arrives, not by the gateway that saw it issued."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    if SHIM_COMMAND in text:
        return True
    if world is None:
        return False
    names = set(world.names)
    return (name in names or name in {function_name(n) for n in names}
            or world_tool_name(name, world.kinds) is not None)
