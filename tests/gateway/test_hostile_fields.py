"""Every field of a request body is the agent's: a field of the wrong type or an impossible value
(``NaN``, an infinity, a string where a number goes, a list where a mapping goes) is a bad request
the agent sees (HTTP 400 in its wire's shape), never a server error, and never recorded as a
failure of the model backend: that record makes the attempt an infrastructure error, retried, so
a request that crashed the gateway's reading would have bought the agent another attempt."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from assay.gateway.errors import BACKEND_FAILURES
from tests.gateway.conftest import Gateway
from tests.gateway.test_hostile_bodies import _headers, _still_serving

NAN, INF = float("nan"), float("inf")
BAD = [NAN, INF, "x", [1], {"a": 1}, True, -1, 10**40]


def _bodies(route: str) -> list[tuple[str, dict[str, Any]]]:
    msg = {"role": "user", "content": "go"}
    out: list[tuple[str, dict[str, Any]]] = []
    if route == "/v1/chat/completions":
        base: dict[str, Any] = {"model": "m", "messages": [msg]}
        fields = ["max_tokens", "max_completion_tokens", "temperature", "stream", "stream_options", "tools",
                  "tool_choice", "model", "n"]
    elif route == "/v1/messages":
        base = {"model": "m", "max_tokens": 5, "messages": [msg]}
        fields = ["max_tokens", "temperature", "stream", "tools", "tool_choice", "model", "system"]
    else:
        base = {"model": "m", "input": [msg]}
        fields = ["max_output_tokens", "temperature", "stream", "tools", "tool_choice", "model", "instructions",
                  "input"]
    for f in fields:
        for v in BAD:
            out.append((f"{f}={v!r}", {**base, f: v}))
    for v in BAD:  # inside a message, its content blocks, its tool calls, and a tool
        if route == "/v1/chat/completions":
            for k, call in (("tool_calls", v), ("tool_call", [v]), ("function", [{"id": "c", "function": v}]),
                            ("arguments", [{"id": "c", "function": {"name": "bash", "arguments": v}}]),
                            ("name", [{"id": "c", "function": {"name": v, "arguments": "{}"}}])):
                out.append((f"{k}={v!r}", {**base, "messages": [msg, {"role": "assistant", "content": None,
                                                                       "tool_calls": call}]}))
            out.append((f"role={v!r}", {**base, "messages": [{"role": v, "content": "go"}]}))
            out.append((f"tool_call_id={v!r}", {**base, "messages": [msg, {"role": "tool", "tool_call_id": v,
                                                                            "content": "x"}]}))
            out.append((f"tool.function={v!r}", {**base, "tools": [{"type": "function", "function": v}]}))
            out.append((f"tool.parameters={v!r}", {**base, "tools": [{"type": "function", "function": {
                "name": "t", "parameters": v}}]}))
        elif route == "/v1/messages":
            for k, block in (("block", v), ("block.type", {"type": v}), ("tool_use.input", {"type": "tool_use", "id": "c",
                             "name": "bash", "input": v}), ("tool_result.content", {"type": "tool_result",
                             "tool_use_id": "c", "content": v}), ("text", {"type": "text", "text": v})):
                out.append((f"{k}={v!r}", {**base, "messages": [{"role": "assistant", "content": [block]}, msg]}))
            out.append((f"role={v!r}", {**base, "messages": [{"role": v, "content": "go"}]}))
            out.append((f"tool.input_schema={v!r}", {**base, "tools": [{"name": "t", "input_schema": v}]}))
            out.append((f"tool.name={v!r}", {**base, "tools": [{"name": v, "input_schema": {}}]}))
        else:
            for k, item in (("item.type", {"type": v}), ("function_call.arguments", {"type": "function_call",
                            "call_id": "c", "name": "bash", "arguments": v}), ("function_call_output.output",
                            {"type": "function_call_output", "call_id": "c", "output": v}),
                            ("item.content", {"role": "user", "content": [{"type": "input_text", "text": v}]})):
                out.append((f"{k}={v!r}", {**base, "input": [msg, item]}))
            out.append((f"tool.parameters={v!r}", {**base, "tools": [{"type": "function", "name": "t",
                                                                       "parameters": v}]}))
    for v in BAD:  # inside a message and a tool
        out.append((f"message={v!r}", {**base, **({"input": [v]} if route == "/v1/responses" else {"messages": [v]})}))
        out.append((f"content={v!r}", {**base, **({"input": [{"role": "user", "content": v}]} if route == "/v1/responses"
                                                  else {"messages": [{"role": "user", "content": v}]})}))
        out.append((f"tool={v!r}", {**base, "tools": [v]}))
    return out


@pytest.mark.parametrize("route", ["/v1/chat/completions", "/v1/messages", "/v1/responses"])
def test_a_field_the_agent_got_wrong_is_its_bad_request_never_the_backends_failure(gateway: Gateway,
                                                                                  route: str) -> None:
    wrong = []
    for name, body in _bodies(route):
        text = json.dumps(body)  # NaN and Infinity written as JSON's readers here take them
        r = httpx.post(gateway.url + route, content=text.encode(), headers=_headers(gateway), timeout=60)
        if r.status_code not in (200, 400):
            wrong.append((name, r.status_code, r.text[:200]))
    # the scripted model's own contract (a script written for tools the agent did not offer) is a
    # mismatch of the harness's configuration, the one backend failure a request may cause here
    failures = [e.data for e in gateway.events("error") if e.data.get("reason") in BACKEND_FAILURES
                and "which the agent does not offer" not in str(e.data.get("message"))]
    assert not wrong, sorted({w[0].split("=")[0] + f" {w[1]}" for w in wrong})
    assert not failures, failures[:5]
    _still_serving(gateway)


@pytest.mark.parametrize("value", ["256", 0, -1, 2.5, True, NAN, INF, 10**40, [256]])
@pytest.mark.parametrize(("wire", "key"), [("openai-chat", "max_tokens"), ("openai-chat", "max_completion_tokens"),
                                           ("anthropic", "max_tokens"), ("openai-responses", "max_output_tokens")])
def test_a_token_limit_that_is_no_whole_number_is_refused_before_any_backend_sees_it(wire: str, key: str,
                                                                                    value: object) -> None:
    """The local model's backend took ``min(max_tokens, 256)``: a string there was a TypeError, a
    502 recorded as the backend's failure (the attempt an infrastructure error, retried)."""
    from assay.gateway.errors import WireError
    from assay.gateway.wire.formats import wires

    body: dict[str, Any] = {"model": "m", key: value}
    body.update({"input": "go"} if wire == "openai-responses" else {"messages": [{"role": "user", "content": "go"}]})
    with pytest.raises(WireError) as e:
        wires()[wire].parse(body)
    assert e.value.status == 400 and key in e.value.message
    ok = {**body, key: 64}
    assert wires()[wire].parse(ok).max_tokens == 64


@pytest.mark.parametrize("value", ["0.2", -0.1, NAN, INF, True, [0]])
def test_a_temperature_that_is_no_finite_number_is_refused(value: object) -> None:
    from assay.gateway.errors import WireError
    from assay.gateway.wire.formats import wires

    for wire in wires().values():
        body: dict[str, Any] = {"model": "m", "max_tokens": 5, "temperature": value, "input": "go",
                                "messages": [{"role": "user", "content": "go"}]}
        with pytest.raises(WireError):
            wire.parse(body)
        assert wire.parse({**body, "temperature": 0}).temperature == 0.0
