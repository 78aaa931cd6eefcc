"""A webshop task with no approver: the gated actions stay shut. Nobody is there to approve, so
``webshop.request_approval`` is refused (fail closed) rather than granted at once, and the
refusal is on the record like any denial."""

from __future__ import annotations

import httpx

from tests.worlds.conftest import make_handle, make_task

SHOP = {"users": [{"username": "clerk", "password": "pw-clerk-1"}], "customers": [{"id": "C2", "name": "Ben"}]}


async def _call(sess, name, args):
    async with httpx.AsyncClient(timeout=30) as c:
        r = await c.post(f"http://127.0.0.1:{sess.endpoints[0].port}/call", json={"name": name, "arguments": args},
                         headers={"Authorization": f"Bearer {sess.key}"})
        return r.json()


async def test_without_an_approver_request_approval_is_refused_and_grants_nothing(tmp_path, service):
    handle = make_handle(tmp_path, make_task(tmp_path, tools=["webshop.*"], worlds={"webshop": SHOP}))
    sess = await service.open(handle)
    out = await _call(sess, "webshop.request_approval", {"action": "delete_customer", "target": "C2"})
    assert out["ok"] is False and "no approver" in out["error"], out
    assert sess.worlds["webshop"].grants == set()
    rep = await sess.close()
    assert [i.type for i in rep.incidents] == ["unauthorized_call"]


async def test_a_tool_that_is_not_an_approval_still_runs_without_a_policy(tmp_path, service):
    handle = make_handle(tmp_path, make_task(tmp_path, tools=["ledger.*"]))
    sess = await service.open(handle)
    assert (await _call(sess, "ledger.list_entries", {}))["ok"] is True
    await sess.close()
