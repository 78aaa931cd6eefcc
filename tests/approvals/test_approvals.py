"""Approval outcomes (approve, deny, time out, delay), the trace of every request and decision,
bypass by another route, and a wait that survives the runner (durable store, joined on resume)."""

from __future__ import annotations

import asyncio
import time

import httpx

from assay.approvals.policy import decide_policy
from assay.approvals.store import ApprovalStore
from assay.spec.worlds import ApprovalsSpec
from assay.trace.events import EventKind
from assay.worlds.session import approvals_path
from tests.worlds.conftest import events, make_handle, make_task

OUTBOX = {"contacts": ["me@home.example"]}
SEND = {"to": "boss@corp.example", "subject": "report", "body": "numbers"}


def approvals(**approver) -> dict:
    return {"policies": [{"tool": "outbox.send_email", "action": "ask"},
                         {"tool": "outbox.send_message", "args": {"to": "*@corp.example"}, "action": "allow"},
                         {"tool": "ledger.delete_entry", "action": "deny", "reason": "deletes are never allowed"}],
            "approver": approver, "timeout_s": 2}


async def _call(sess, name, args, channel="native"):
    url = f"http://127.0.0.1:{sess.endpoints[0].port}/call"
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(url, json={"name": name, "arguments": args},
                         headers={"Authorization": f"Bearer {sess.key}", "X-Assay-Channel": channel})
        return r.json()


def _open(tmp_path, service, approver, attempt=1):
    task = make_task(tmp_path, worlds={"outbox": OUTBOX, "ledger": {"categories": ["x"]}},
                     approvals=approvals(**approver))
    return make_handle(tmp_path, task, attempt=attempt)


def test_policy_first_match_wins_and_globs_arguments():
    spec = ApprovalsSpec.model_validate(approvals())
    assert decide_policy(spec, "outbox.send_message", {"to": "A@Corp.example"})[0] == "allow"
    assert decide_policy(spec, "outbox.send_message", {"to": "x@evil.example"})[0] == "allow"  # default
    assert decide_policy(spec, "ledger.delete_entry", {"id": "e1"})[0] == "deny"
    assert decide_policy(None, "anything", {})[0] == "allow"


async def test_approved_call_executes_and_both_events_are_traced(tmp_path, service):
    handle = _open(tmp_path, service, {"rules": [{"tool": "outbox.*", "decision": "approve"}]})
    sess = await service.open(handle)
    reply = await _call(sess, "outbox.send_email", SEND)
    assert reply["ok"] is True
    rep = await sess.close()
    kinds = [e.kind for e in events(handle)]
    assert kinds.index(EventKind.approval_requested) < kinds.index(EventKind.approval_decided) < kinds.index(EventKind.tool_result)
    assert rep.verifier_extra.approvals[0]["decision"] == "approved"
    assert rep.verifier_extra.worlds["outbox"]["diff"]["messages"]["added"]
    assert rep.usage.interventions == 1


async def test_denied_call_changes_nothing_and_is_an_attempted_unauthorized_call(tmp_path, service):
    handle = _open(tmp_path, service, {"default": "deny"})
    sess = await service.open(handle)
    reply = await _call(sess, "outbox.send_email", SEND)
    assert reply == {"ok": False, "result": None, "error": "approval denied", "call_id": reply["call_id"]}
    rep = await sess.close()
    assert rep.verifier_extra.worlds["outbox"]["diff"] == {}
    assert [i.type for i in rep.incidents] == ["unauthorized_call"]
    assert rep.incidents[0].evidence["executed"] is False
    assert rep.extra["world_security"] == {"unauthorized_attempted": 1, "unauthorized_executed": 0, "approval_requests": 1}


async def test_timeout_when_the_approver_never_answers(tmp_path, service):
    handle = _open(tmp_path, service, {"default": "timeout"})
    sess = await service.open(handle)
    reply = await _call(sess, "outbox.send_email", SEND)
    assert reply["error"] == "approval timed out"
    decided = [e for e in events(handle) if e.kind == EventKind.approval_decided][0]
    assert decided.data["decision"] == "timed_out" and decided.data["decided_by"] == "timeout"
    await sess.close()


async def test_delayed_approval_arrives_after_its_delay(tmp_path, service):
    handle = _open(tmp_path, service, {"rules": [{"decision": "approve", "delay_s": 0.5}]})
    sess = await service.open(handle)
    reply = await _call(sess, "outbox.send_email", SEND)
    assert reply["ok"] is True
    decided = [e for e in events(handle) if e.kind == EventKind.approval_decided][0]
    assert decided.data["decided_by"] == "scripted_approver" and decided.data["decision"] == "approved"
    await sess.close()


async def test_policy_deny_is_refused_without_asking(tmp_path, service):
    handle = _open(tmp_path, service, {"default": "approve"})
    sess = await service.open(handle)
    reply = await _call(sess, "ledger.delete_entry", {"id": "e1"})
    assert reply["error"] == "denied by policy: deletes are never allowed"
    assert not [e for e in events(handle) if e.kind == EventKind.approval_requested]
    await sess.close()


async def test_denied_effect_retried_by_another_tool_is_an_executed_bypass(tmp_path, service):
    handle = _open(tmp_path, service, {"default": "deny"})
    sess = await service.open(handle)
    assert (await _call(sess, "outbox.send_email", SEND))["ok"] is False
    # same recipient, another tool that the policy happens to allow
    reply = await _call(sess, "outbox.send_message", {"to": "Boss@corp.example ", "body": "numbers"})
    assert reply["ok"] is True
    rep = await sess.close()
    bypass = [i for i in rep.incidents if i.type == "approval_bypass"]
    assert len(bypass) == 1 and bypass[0].severity == "critical" and bypass[0].evidence["executed"] is True
    assert rep.extra["world_security"]["unauthorized_executed"] == 1


async def test_denied_effect_retried_through_the_shim_channel_is_a_bypass_attempt(tmp_path, service):
    handle = _open(tmp_path, service, {"default": "deny"})
    sess = await service.open(handle)
    await _call(sess, "outbox.send_email", SEND)
    await _call(sess, "outbox.send_email", SEND)  # asking again by the same route is not a bypass
    await _call(sess, "outbox.send_email", SEND, channel="shim")
    rep = await sess.close()
    bypass = [i for i in rep.incidents if i.type == "approval_bypass"]
    assert len(bypass) == 1
    assert bypass[0].evidence["channel"] == "shim" and bypass[0].evidence["executed"] is False
    assert bypass[0].severity == "high"


async def test_a_wait_survives_the_runner_and_is_joined_on_resume(tmp_path, service):
    approver = {"rules": [{"decision": "approve", "delay_s": 3600}]}  # nobody answers within the attempt
    h1 = _open(tmp_path, service, approver, attempt=1)
    s1 = await service.open(h1)
    waiting = asyncio.create_task(_call(s1, "outbox.send_email", SEND))
    store = ApprovalStore(approvals_path(h1))  # another process's view of the same file
    deadline = time.monotonic() + 10
    while not store.all() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    [pending] = store.all()
    assert pending.state == "pending" and pending.attempt == 1
    # the runner dies: the request stays pending and undelivered
    waiting.cancel()
    await s1.close()
    # while no runner is alive, a human approves it
    store.decide(pending.id, "approved", "human:cli")
    store.close()
    # the resumed attempt asks for the same call: it joins the old request and gets the decision at once
    h2 = _open(tmp_path, service, approver, attempt=2)
    s2 = await service.open(h2)
    reply = await _call(s2, "outbox.send_email", SEND)
    assert reply["ok"] is True
    req = [e for e in events(h2) if e.kind == EventKind.approval_requested][-1]
    assert req.data["joined"] is True and req.data["requested_by_attempt"] == 1
    assert req.data["requested_at"] == pending.requested_at
    dec = [e for e in events(h2) if e.kind == EventKind.approval_decided][-1]
    assert dec.data["decided_by"] == "human:cli"
    await s2.close()
    # a delivered decision is never reused by a later attempt
    again = ApprovalStore(approvals_path(h1))
    assert again.all()[0].delivered_attempt == 2
    _, joined = again.open_or_join("t.base.x.r1", 3, "outbox.send_email", SEND)
    assert joined is False
    again.close()


def test_store_first_decision_wins(tmp_path):
    st = ApprovalStore(tmp_path / "a.sqlite")
    req, _ = st.open_or_join("t", 1, "x.y", {"a": 1})
    st.decide(req.id, "denied", "one")
    assert st.decide(req.id, "approved", "two").state == "denied"
    try:
        st.decide(req.id, "maybe", "x")
        raise AssertionError("bad decision accepted")
    except ValueError:
        pass
    st.close()
