"""World tool calls count against the attempt's ``tool_calls`` budget whatever the exposure
(native, MCP, the shell shim), each once; past the budget the world refuses, says why, and
records it, and the world is left unchanged."""

from __future__ import annotations

import json
import subprocess

import httpx

from assay.harness.budget import BudgetMeter
from assay.spec.budget import Budget, BudgetName
from assay.trace.events import EventKind, Source
from tests.worlds.conftest import events, make_handle, make_task
from tests.worlds.test_exposures import _env

ENTRY = {"date": "2026-03-05", "currency": "CNY", "category": "dining"}


async def test_world_calls_over_every_channel_share_one_tool_call_budget(tmp_path, service):
    from mcp import Client

    handle = make_handle(tmp_path, make_task(tmp_path))
    handle.budget = Budget(tool_calls=2)
    handle.meter = meter = BudgetMeter(handle.budget)
    meter.charge_turn(0)  # the gateway's share of the same meter: a turn issuing no counted call
    sess = await service.open(handle)
    env = _env(sess)
    url, key = env["ASSAY_TOOLS_URL"], env["ASSAY_TOOLS_KEY"]
    auth = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient() as c:  # 1: native
        r = await c.post(url + "/call", headers=auth,
                         json={"name": "ledger.record_entry", "arguments": {**ENTRY, "amount": 1, "merchant": "A"}})
        assert r.json()["ok"] is True
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=auth) as h2:  # 2: MCP
        async with Client(streamable_http_client(url + "/mcp/", http_client=h2)) as client:
            assert not (await client.call_tool("ledger.record_entry", {**ENTRY, "amount": 2, "merchant": "B"})).is_error
            refused = await client.call_tool("ledger.record_entry", {**ENTRY, "amount": 3, "merchant": "C"})  # 3: over
            assert refused.is_error
    proc = subprocess.run(["/usr/bin/python3", env["ASSAY_TOOL"], "ledger.record_entry", "--json",  # 4: shim, over
                           json.dumps({**ENTRY, "amount": 4, "merchant": "D"})],
                          env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "budget_exceeded" in proc.stdout + proc.stderr
    assert meter.tool_calls == 2 and meter.turns == 1 and meter.ended_by is BudgetName.tool_calls
    rep = await sess.close()
    added = rep.verifier_extra.worlds["ledger"]["diff"]
    assert sorted(r["merchant"] for r in added["entries"]["added"].values()) == ["A", "B"]
    evs = events(handle)
    hits = [e for e in evs if e.kind is EventKind.budget_exceeded]
    assert [(e.source, e.data["channel"], e.data["used"]) for e in hits] == [(Source.world, "mcp", 2),
                                                                            (Source.world, "shim", 2)]
    results = [e.data for e in evs if e.kind is EventKind.tool_result and e.source is Source.world]
    assert [(r["ok"], r["executed"]) for r in results] == [(True, True), (True, True), (False, False), (False, False)]
    assert all("budget_exceeded" in r["error"] for r in results[2:])
