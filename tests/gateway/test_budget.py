"""Budgets: refused past the limit with an error the agent sees, recorded as budget_exceeded."""

from __future__ import annotations

import anthropic
import httpx
import openai
import pytest

from assay.spec.budget import Budget
from tests.gateway.conftest import OPENAI_TOOLS, Gateway

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
