"""The same tools natively, over MCP (streamable HTTP and stdio) and through the shell shim:
every route lands in one world and one trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from assay.trace.events import EventKind, Source
from tests.worlds.conftest import events, make_handle, make_task

REPO = Path(__file__).resolve().parents[2]


def _env(sess) -> dict[str, str]:  # the engine fills the placeholders; here the host path is the inside path
    url = f"http://127.0.0.1:{sess.endpoints[0].port}"
    home = str(sess.handle.scratch / "home")
    return {k: v.replace("{endpoint:tools}", url).replace("{home}", home) for k, v in sess.env.items()}


async def test_native_mcp_shim_and_stdio_land_in_one_world_and_trace(tmp_path, service):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    handle = make_handle(tmp_path, make_task(tmp_path))
    sess = await service.open(handle)
    env = _env(sess)
    url, key = env["ASSAY_TOOLS_URL"], env["ASSAY_TOOLS_KEY"]
    entry = {"date": "2026-03-05", "currency": "CNY", "category": "dining"}

    # 1. native
    async with httpx.AsyncClient() as c:
        tools = (await c.get(url + "/tools", headers={"Authorization": f"Bearer {key}"})).json()
        assert "ledger.record_entry" in {t["name"] for t in tools}
        assert all("input_schema" in t for t in tools)
        r = await c.post(url + "/call", headers={"Authorization": f"Bearer {key}"},
                         json={"name": "ledger.record_entry", "arguments": {**entry, "amount": 1, "merchant": "A"}})
        assert r.json()["ok"] is True

    # 2. MCP streamable HTTP, with the SDK's client
    import httpx2  # the mcp SDK's HTTP client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as h2:
        async with Client(streamable_http_client(url + "/mcp/", http_client=h2)) as client:
            listed = await client.list_tools()
            assert "ledger.record_entry" in {t.name for t in listed.tools}
            res = await client.call_tool("ledger.record_entry", {**entry, "amount": 2, "merchant": "B"})
            assert not res.is_error

    # 3. the shell shim, as a shell-only agent would run it (system python, no assay installed)
    shim = env["ASSAY_TOOL"]
    proc = subprocess.run(["/usr/bin/python3", shim, "ledger.record_entry", "--json",
                           json.dumps({**entry, "amount": 3, "merchant": "C"})],
                          env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["entry"]["merchant"] == "C"

    # 4. MCP stdio (a proxy process over the native API)
    params = StdioServerParameters(command=sys.executable, args=["-m", "assay.worlds.mcp_stdio"],
                                   env={**env, "PYTHONPATH": str(REPO / "src")})
    async with Client(params) as client:
        res = await client.call_tool("ledger.record_entry", {**entry, "amount": 4, "merchant": "D"})
        assert not res.is_error, res

    report = await sess.close()
    final = report.verifier_extra.worlds["ledger"]["final"]["entries"]
    assert sorted(e["merchant"] for e in final.values()) == ["A", "B", "C", "D", "Metro"]
    calls = [e for e in events(handle) if e.kind == EventKind.tool_call and e.source == Source.world]
    assert [c.data["channel"] for c in calls] == ["native", "mcp", "shim", "mcp-stdio"]
    results = [e for e in events(handle) if e.kind == EventKind.tool_result]
    assert all(r.data["executed"] for r in results)
    assert key not in handle.trace.path.read_text()  # the per-attempt key is redacted from the trace


async def test_unknown_key_and_bad_body_are_refused(tmp_path, service):
    handle = make_handle(tmp_path, make_task(tmp_path))
    sess = await service.open(handle)
    url = f"http://127.0.0.1:{sess.endpoints[0].port}"
    async with httpx.AsyncClient() as c:
        assert (await c.get(url + "/tools")).status_code == 401
        assert (await c.get(url + "/tools", headers={"Authorization": "Bearer nope"})).status_code == 401
        assert (await c.post(url + "/mcp/", headers={"Authorization": "Bearer nope"}, json={})).status_code == 401
        r = await c.post(url + "/call", headers={"Authorization": f"Bearer {sess.key}"}, content=b"{not json")
        assert r.status_code == 400
        r = await c.post(url + "/call", headers={"Authorization": f"Bearer {sess.key}"},
                         json={"name": "ledger.record_entry", "arguments": {"amount": "many"}})
        body = r.json()
        assert body["ok"] is False and "invalid arguments" in body["error"]
    await sess.close()
    async with httpx.AsyncClient() as c:  # a closed session's key no longer opens anything
        assert (await c.get(url + "/tools", headers={"Authorization": f"Bearer {sess.key}"})).status_code == 401


def test_shim_without_service_fails_with_usage_exit(tmp_path):
    from assay.worlds.shim import SHIM_SOURCE_PATH

    p = subprocess.run(["/usr/bin/python3", str(SHIM_SOURCE_PATH), "ledger.list_entries"], env={"PATH": "/usr/bin"},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "ASSAY_TOOLS_URL" in p.stderr
    p = subprocess.run(["/usr/bin/python3", str(SHIM_SOURCE_PATH), "x.y"],
                       env={"PATH": "/usr/bin", "ASSAY_TOOLS_URL": "http://127.0.0.1:9"},
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "cannot reach" in p.stderr
