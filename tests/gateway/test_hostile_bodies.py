"""Request bodies are the agent's: JSON nested as deep as the parser takes, or deeper, is a bad
request the agent sees (HTTP 400 in its wire's error shape), recorded like any other call, and the
gateway goes on serving every session."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.gateway.conftest import Gateway

BODY = {"model": "m", "messages": [{"role": "user", "content": "go"}]}


ROUTES = ["/v1/chat/completions", "/v1/messages", "/v1/responses"]


def _headers(gateway: Gateway) -> dict[str, str]:
    return {"Authorization": f"Bearer {gateway.key}", "x-api-key": gateway.key, "content-type": "application/json"}


def _still_serving(gateway: Gateway) -> None:
    ok = httpx.post(gateway.url + "/v1/chat/completions", json=BODY, headers=_headers(gateway), timeout=60)
    assert ok.status_code == 200, ok.text[:300]


@pytest.mark.parametrize("route", ROUTES)
def test_a_body_nested_past_the_parser_is_a_bad_request_and_the_gateway_stays_up(gateway: Gateway,
                                                                                 route: str) -> None:
    nested = "[" * 100_000 + "]" * 100_000
    body = ('{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "go"}], "metadata": '
            + nested + "}")
    r = httpx.post(gateway.url + route, content=body.encode(), headers=_headers(gateway), timeout=60)
    assert r.status_code == 400, (r.status_code, r.text[:300])
    assert "error" in r.json()
    _still_serving(gateway)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("where", ["tool parameters", "message content", "tool arguments"])
def test_deep_but_parseable_bodies_never_crash_the_gateway(gateway: Gateway, route: str, where: str) -> None:
    """Nesting the parser takes (900 levels) where the gateway reads, counts and records it: an
    answer or a bad request, never a server error, and the recording stays writable."""
    deep = json.loads("[" * 900 + "]" * 900)
    if where == "tool parameters":
        tool = ({"name": "t", "description": "d", "input_schema": {"type": "object", "properties": {"a": {"default": deep}}}}
                if route == "/v1/messages" else
                {"type": "function", "function": {"name": "t", "parameters": {"type": "object",
                                                                              "properties": {"a": {"default": deep}}}}}
                if route == "/v1/chat/completions" else
                {"type": "function", "name": "t", "parameters": {"type": "object", "properties": {"a": {"default": deep}}}})
        body: dict = {**BODY, "max_tokens": 5, "tools": [tool]}
    elif where == "message content":
        body = {**BODY, "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": "x",
                                                                                     "extra": deep}]}]}
    else:
        call = json.dumps({"a": deep})
        body = {**BODY, "max_tokens": 5, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                   "function": {"name": "t", "arguments": call}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"}]}
    if route == "/v1/responses":
        body = {"model": "m", "input": body["messages"], **({"tools": body["tools"]} if "tools" in body else {})}
    r = httpx.post(gateway.url + route, content=json.dumps(body).encode(), headers=_headers(gateway), timeout=60)
    assert r.status_code in (200, 400), (r.status_code, r.text[:300])
    _still_serving(gateway)
    gateway.service.close_session(gateway.session)  # the session's records are written whole
