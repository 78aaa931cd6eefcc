"""Tool faults injected by the world service over real HTTP on loopback, against a real SQLite
ledger: what the agent receives, whether the side effect happened, what the trace records, and
lookup by idempotency key."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from assay.spec.tool_faults import ToolFaultSpec
from assay.trace.events import EventKind
from assay.worlds.faults import duplicate_side_effects
from tests.worlds.conftest import events, make_handle, make_task

ENTRY = {"date": "2026-03-05", "amount": 12, "currency": "CNY", "category": "dining", "merchant": "Noodle Bar"}


async def _session(tmp_path, service, *faults: dict):
    task = make_task(tmp_path, variants=[{"id": "f", "tool_faults": list(faults)}])
    handle = dataclasses.replace(make_handle(tmp_path, task), variant="f")
    sess = await service.open(handle)
    url = f"http://127.0.0.1:{sess.endpoints[0].port}"
    return sess, handle, url, {"Authorization": f"Bearer {sess.key}"}


async def _call(c, url, hdr, name, args):
    return await c.post(url + "/call", headers=hdr, json={"name": name, "arguments": args})


def _entries(sess) -> list[dict]:
    return list(sess.worlds["ledger"].state()["entries"].values())


@pytest.mark.parametrize("kind, executed", [("error", False), ("timeout", False), ("truncated", True), ("slow", True)])
async def test_answered_faults(tmp_path, service, kind, executed):
    sess, handle, url, hdr = await _session(tmp_path, service,
                                            {"kind": kind, "tool": "ledger.record_entry", "delay_s": 0.2})
    async with httpx.AsyncClient(timeout=30) as c:
        r = (await _call(c, url, hdr, "ledger.record_entry", ENTRY)).json()
        again = (await _call(c, url, hdr, "ledger.record_entry", {**ENTRY, "merchant": "Second"})).json()
    assert again["ok"] is True  # on_call 1, times 1: only the first matching call is hit
    booked = [e["merchant"] for e in _entries(sess)]
    assert ("Noodle Bar" in booked) is executed
    if kind in ("error", "timeout"):
        assert r["ok"] is False and "injected tool fault" in r["error"]
        assert ("timed out" in r["error"]) is (kind == "timeout")
    elif kind == "truncated":
        assert r["ok"] is True and isinstance(r["result"], str) and len(r["result"]) == 24
    else:
        assert r["ok"] is True and r["result"]["entry"]["merchant"] == "Noodle Bar"
    faults = [e for e in events(handle) if e.kind == EventKind.fault_injected]
    assert [(f.data["kind"], f.data["executed"], f.data["name"]) for f in faults] == [(kind, executed, "ledger.record_entry")]
    rep = await sess.close()
    assert rep.extra["tool_faults"][0]["kind"] == kind and rep.extra["duplicate_side_effects"] == 0


@pytest.mark.parametrize("kind, executed", [("dropped", False), ("lost_receipt", True)])
async def test_connection_faults_drop_the_answer(tmp_path, service, kind, executed):
    sess, handle, url, hdr = await _session(tmp_path, service, {"kind": kind, "tool": "ledger.*"})
    args = {**ENTRY, "idempotency_key": "k-1"}
    async with httpx.AsyncClient(timeout=30) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            await _call(c, url, hdr, "ledger.record_entry", args)
        # a careful agent asks whether its write happened before trying again
        found = (await _call(c, url, hdr, "ledger.lookup_idempotency_key", {"idempotency_key": "k-1"})).json()
        retry = (await _call(c, url, hdr, "ledger.record_entry", args)).json()
    assert found["ok"] is True and found["result"]["found"] is executed
    assert retry["ok"] is True and retry["result"]["replayed"] is executed
    assert len(_entries(sess)) == 2  # the seeded entry and exactly one booking
    rep = await sess.close()
    assert rep.extra["duplicate_side_effects"] == 0
    fault = [e for e in events(handle) if e.kind == EventKind.fault_injected][0]
    assert fault.data["kind"] == kind and fault.data["executed"] is executed


async def test_a_retry_without_key_after_a_lost_receipt_is_a_duplicate(tmp_path, service):
    sess, handle, url, hdr = await _session(tmp_path, service, {"kind": "lost_receipt", "tool": "ledger.record_entry"})
    async with httpx.AsyncClient(timeout=30) as c:
        with pytest.raises(httpx.RemoteProtocolError):
            await _call(c, url, hdr, "ledger.record_entry", ENTRY)
        assert (await _call(c, url, hdr, "ledger.record_entry", ENTRY)).json()["ok"] is True
    rep = await sess.close()
    assert rep.extra["duplicate_side_effects"] == 1


async def test_nth_call_and_unmatched_tools(tmp_path, service):
    sess, handle, url, hdr = await _session(tmp_path, service,
                                            {"kind": "error", "tool": "ledger.record_entry", "on_call": 2, "times": 2})
    async with httpx.AsyncClient(timeout=30) as c:
        oks = [(await _call(c, url, hdr, "ledger.record_entry", {**ENTRY, "amount": n})).json()["ok"] for n in (1, 2, 3, 4)]
        listed = (await _call(c, url, hdr, "ledger.list_entries", {})).json()
    assert oks == [True, False, False, True] and listed["ok"] is True
    assert len([e for e in events(handle) if e.kind == EventKind.fault_injected]) == 2
    await sess.close()


async def test_base_variant_has_no_faults(tmp_path, service):
    task = make_task(tmp_path, variants=[{"id": "f", "tool_faults": [{"kind": "error"}]}])
    handle = make_handle(tmp_path, task)  # variant "base"
    sess = await service.open(handle)
    async with httpx.AsyncClient(timeout=30) as c:
        r = await _call(c, f"http://127.0.0.1:{sess.endpoints[0].port}", {"Authorization": f"Bearer {sess.key}"},
                        "ledger.record_entry", ENTRY)
    assert r.json()["ok"] is True
    assert not [e for e in events(handle) if e.kind == EventKind.fault_injected]
    assert (await sess.close()).extra.get("tool_faults") is None


def test_fault_spec_is_checked():
    with pytest.raises(ValueError):
        ToolFaultSpec.model_validate({"kind": "explode"})
    with pytest.raises(ValueError):
        ToolFaultSpec.model_validate({"kind": "slow", "on_call": 0})


def test_duplicates_count_identical_added_rows_only():
    row = {"date": "d", "amount": 1, "merchant": "m"}
    diffs = {"ledger": {"entries": {"added": {"e3": {"id": "e3", **row}, "e4": {"id": "e4", **row},
                                              "e5": {"id": "e5", **row}, "e6": {"id": "e6", **row, "amount": 2}},
                                    "removed": {}, "changed": {}}}}
    assert duplicate_side_effects(diffs) == 2
    assert duplicate_side_effects({}) == 0
