"""Tool calls are the agent's: a body nested past the JSON parser's depth is a bad request (400),
and arguments nested as deep as the parser takes are answered as invalid, recorded (cut) in the
trace and the world's call log, and the session closes and checkpoints whole."""

from __future__ import annotations

import json

import httpx

from assay.trace.events import EventKind
from tests.worlds.conftest import events, make_handle, make_task


async def test_deep_tool_calls_are_refused_and_recorded_without_breaking_the_session(tmp_path, service):
    handle = make_handle(tmp_path, make_task(tmp_path))
    sess = await service.open(handle)
    url = f"http://127.0.0.1:{sess.endpoints[0].port}"
    auth = {"Authorization": f"Bearer {sess.key}", "content-type": "application/json"}
    past = '{"name": "ledger.record_entry", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}"
    deep = json.loads("[" * 900 + "]" * 900)
    async with httpx.AsyncClient(timeout=60) as c:
        r = await c.post(url + "/call", headers=auth, content=past.encode())
        assert r.status_code == 400, (r.status_code, r.text[:200])
        r = await c.post(url + "/call", headers=auth, content=json.dumps(
            {"name": "ledger.record_entry", "arguments": {"amount": deep, "merchant": deep}}).encode())
        assert r.status_code == 200 and r.json()["ok"] is False, r.text[:300]
        r = await c.post(url + "/call", headers=auth, json={"name": "ledger.record_entry", "arguments": {
            "date": "2026-03-02", "amount": 12.0, "currency": "CNY", "category": "dining", "merchant": "Lumen"}})
        assert r.status_code == 200 and r.json()["ok"] is True, r.text[:300]
    state = await sess.checkpoint("t1")
    json.dumps(state.payload(), default=str)  # what a conversation keeps after a turn serialises
    assert [c["ok"] for c in state.tool_calls] == [False, True]
    report = await sess.close()
    calls = [e for e in events(handle) if e.kind == EventKind.tool_call]
    assert len(calls) == 2 and report is not None
