"""Budgets: refused past the limit with an error the agent sees, recorded as budget_exceeded."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from assay.harness.budget import BudgetMeter
from assay.harness.evidence import is_world_call
from assay.harness.wiring import WorldToolContract
from assay.spec.budget import Budget, BudgetName
from tests.gateway.conftest import ANTHROPIC_TOOLS, OPENAI_TOOLS, Gateway

BODY = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": OPENAI_TOOLS}


def test_model_call_budget(gateway: Gateway) -> None:
    gateway.session.budget = Budget(model_calls=2)
    c = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=3)
    for _ in range(2):
        c.chat.completions.create(**BODY)
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(**BODY)
    assert "model_calls budget is spent" in str(e.value)
    ev, = gateway.events("budget_exceeded")
    assert ev.data == {"budget": "model_calls", "limit": 2.0, "used": 2.0, "call": 3}
    rep = gateway.service.close_session(gateway.session)
    assert rep.budget_exceeded == ["model_calls"] and rep.usage.model_calls == 2


def test_token_budget_in_anthropic_shape(gateway: Gateway) -> None:
    gateway.session.budget = Budget(tokens=3)
    a = anthropic.Anthropic(base_url=gateway.url, api_key=gateway.key, max_retries=0)
    a.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
    with pytest.raises(anthropic.BadRequestError) as e:
        a.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
    assert "budget_exceeded" in str(e.value)
    assert gateway.events("budget_exceeded")[0].data["budget"] == "tokens"


def test_cost_budget(gateway: Gateway) -> None:
    gateway.session.budget = Budget(cost_usd=0.0000001)
    h = {"Authorization": f"Bearer {gateway.key}"}
    assert httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers=h).status_code == 200
    r = httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers=h)
    assert r.status_code == 400 and r.json()["error"]["type"] == "budget_exceeded"
    assert gateway.session.tally.cost_usd > 0.0000001


# ---------------------------------------------------------------------------------------------
# Turns and tool calls: counted on the attempt's budget meter (shared with the world dispatcher)

def test_turn_budget_refuses_the_next_model_call(gateway: Gateway) -> None:
    gateway.session.meter = meter = BudgetMeter(Budget(turns=1))
    c = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=3)
    c.chat.completions.create(**BODY)
    with pytest.raises(openai.BadRequestError) as e:
        c.chat.completions.create(**BODY)
    assert "turns budget is spent (1 of 1)" in str(e.value) and e.value.status_code == 400
    ev, = gateway.events("budget_exceeded")
    assert ev.data == {"budget": "turns", "limit": 1, "used": 1, "call": 2}
    assert meter.ended_by is BudgetName.turns and meter.turns == 1
    rep = gateway.service.close_session(gateway.session)
    assert rep.budget_exceeded == ["turns"] and rep.usage.model_calls == 1


def _tool_call_via(wire: str, gateway: Gateway) -> None:
    """One model call over ``wire`` whose scripted reply issues a shell call."""
    if wire == "chat":
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0).chat.completions.create(**BODY)
    elif wire == "responses":
        tools = [{"type": "function", "name": "bash", "parameters": OPENAI_TOOLS[0]["function"]["parameters"]}]
        openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0).responses.create(
            model="m", input="go", tools=tools)
    else:
        anthropic.Anthropic(base_url=gateway.url, api_key=gateway.key, max_retries=0).messages.create(
            model="m", max_tokens=100, messages=[{"role": "user", "content": "go"}], tools=ANTHROPIC_TOOLS)


@pytest.mark.parametrize("wire", ["chat", "responses", "anthropic"])
def test_a_reply_past_the_tool_call_budget_is_not_delivered(gateway: Gateway, wire: str) -> None:
    gateway.session.meter = meter = BudgetMeter(Budget(tool_calls=1))
    _tool_call_via(wire, gateway)  # one shell call: within the budget
    assert meter.tool_calls == 1
    error = anthropic.BadRequestError if wire == "anthropic" else openai.BadRequestError
    with pytest.raises(error) as e:
        _tool_call_via(wire, gateway)  # a second one would be past it: refused, in this wire's error shape
    assert e.value.status_code == 400 and "tool_calls budget is spent (1 of 1)" in str(e.value)
    if wire == "anthropic":  # Anthropic's shape: invalid_request_error, the type named in the message
        assert e.value.body["error"]["type"] == "invalid_request_error" and "budget_exceeded:" in str(e.value)
    else:
        assert e.value.code == "budget_exceeded"
    ev, = gateway.events("budget_exceeded")
    assert ev.data == {"budget": "tool_calls", "limit": 1, "used": 1, "call": 2}
    assert meter.tool_calls == 1 and meter.turns == 1 and meter.ended_by is BudgetName.tool_calls


def test_world_calls_issued_by_the_model_are_left_to_the_world() -> None:
    """A shell call carrying the shim, a world tool's own name or its MCP name is counted by the
    world dispatcher when the call arrives, never here as well (no double counting)."""
    world = WorldToolContract(tools=({"name": "ledger.record_entry"},), kinds=("ledger",))
    for name, args in [("bash", {"command": "assay-tool ledger.record_entry --json '{}'"}),
                       ("ledger.record_entry", {}), ("ledger__record_entry", {}),
                       ("mcp__assay__ledger_record_entry", {}), ("assay__ledger-record_entry", {})]:
        assert is_world_call(name, args, world), name
    assert is_world_call("bash", '{"command": "assay-tool ledger.list_entries"}', None)  # shim, even unwired
    assert not is_world_call("bash", {"command": "ls"}, world)
    assert not is_world_call("mcp__assay__weather_today", {}, world)
    assert not is_world_call("ledger__record_entry", {}, None)
