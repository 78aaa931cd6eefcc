"""An MCP stdio server for agents that launch their MCP servers as subprocesses:
``python -m assay.worlds.mcp_stdio`` inside the sandbox. It forwards ``tools/list`` and
``tools/call`` to the tool service's native API (``ASSAY_TOOLS_URL``, ``ASSAY_TOOLS_KEY``), so
the calls land in the same world and trace as every other route (channel ``mcp-stdio``)."""

from __future__ import annotations

import os
from typing import Any

import anyio
import httpx

from assay.worlds.mcp_server import build_mcp_server

TIMEOUT_S = 3600.0  # an approval may hold a call; the harness's watchdog bounds the attempt


class _HttpBackend:
    def __init__(self, url: str, key: str):
        self.url = url.rstrip("/")
        self.headers = {"Authorization": f"Bearer {key}", "X-Assay-Channel": "mcp-stdio"}

    async def list_tools(self, ctx: Any) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(timeout=30) as c:
            r = await c.get(self.url + "/tools", headers=self.headers)
            r.raise_for_status()
            return list(r.json())

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as c:
            r = await c.post(self.url + "/call", json={"name": name, "arguments": arguments}, headers=self.headers)
            if r.status_code != 200:
                return {"ok": False, "error": f"tool service answered HTTP {r.status_code}"}
            return dict(r.json())


async def _main() -> None:
    from mcp.server.stdio import stdio_server

    url, key = os.environ.get("ASSAY_TOOLS_URL"), os.environ.get("ASSAY_TOOLS_KEY", "")
    if not url:
        raise SystemExit("assay.worlds.mcp_stdio: ASSAY_TOOLS_URL is not set")
    server = build_mcp_server(_HttpBackend(url, key))
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main() -> None:
    anyio.run(_main)


if __name__ == "__main__":
    main()
