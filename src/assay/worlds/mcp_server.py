"""The world tools over MCP (the ``mcp`` SDK's low-level server).

``build_mcp_server(backend)`` gives a server whose ``tools/list`` and ``tools/call`` go to a
backend: in the tool service that is the attempt's dispatcher (found by the bearer key of the
HTTP request, see :mod:`assay.worlds.server`); in the stdio server (:mod:`assay.worlds.mcp_stdio`)
it is the native HTTP API of the same service. Either way, calls land in the same world and trace.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Protocol

import mcp_types as types
from mcp.server import Server


class ToolBackend(Protocol):
    async def list_tools(self, ctx: Any) -> list[dict[str, Any]]: ...

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...


def to_mcp_result(reply: dict[str, Any]) -> types.CallToolResult:
    """A native reply (``{ok, result, error}``) as an MCP tool result."""
    if reply.get("ok"):
        text = json.dumps(reply.get("result"), ensure_ascii=False, default=str)
        structured = reply.get("result") if isinstance(reply.get("result"), dict) else None
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)
    return types.CallToolResult(content=[types.TextContent(text=str(reply.get("error")))], is_error=True)


def build_mcp_server(backend: ToolBackend, name: str = "assay-worlds") -> Server[Any]:
    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = await backend.list_tools(ctx)
        return types.ListToolsResult(tools=[types.Tool(name=t["name"], description=t["description"],
                                                       input_schema=t["input_schema"]) for t in tools])

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        reply = await backend.call(ctx, params.name, dict(params.arguments or {}))
        return to_mcp_result(reply)

    return Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


AsyncFn = Callable[..., Awaitable[Any]]
