"""The official openai SDK, unchanged, against the gateway: chat (streamed and not), responses, models."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.gateway.conftest import OPENAI_TOOLS, Gateway


def client(gw: Gateway, key: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=gw.url + "/v1", api_key=key or gw.key, max_retries=0)


def test_chat_tool_call_rendered_onto_agent_tool_names(gateway: Gateway) -> None:
    r = client(gateway).chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}],
                                                tools=OPENAI_TOOLS, max_completion_tokens=50)
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls"
    assert msg.content == "Looking."
    assert [c.function.name for c in msg.tool_calls] == ["bash"]
    assert json.loads(msg.tool_calls[0].function.arguments) == {"command": "echo hi"}
    assert r.usage.prompt_tokens > 0 and r.usage.completion_tokens > 0


def test_chat_second_turn_from_conversation_and_argument_renaming(gateway: Gateway) -> None:
    call = {"id": "call_0_0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "echo hi"}'}}
    msgs = [{"role": "developer", "content": "sys"}, {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0_0", "content": "hi"}]
    r = client(gateway).chat.completions.create(model="m", messages=msgs, tools=OPENAI_TOOLS, max_tokens=99)
    c = r.choices[0].message.tool_calls[0]
    assert c.function.name == "write_file"
    assert json.loads(c.function.arguments) == {"file_path": "out.txt", "content": "ok\n"}


def test_chat_stream_reassembles_and_ends_with_usage_chunk(gateway: Gateway) -> None:
    stream = client(gateway).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], tools=OPENAI_TOOLS, stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    args = "".join(tc.function.arguments or "" for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or []))
    finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert text == "Looking." and json.loads(args) == {"command": "echo hi"} and finish == ["tool_calls"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_chat_stream_without_include_usage_has_no_usage_chunk(gateway: Gateway) -> None:
    chunks = list(client(gateway).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], tools=OPENAI_TOOLS, stream=True))
    assert all(c.choices for c in chunks)


def test_responses_api_plain_and_streamed(gateway: Gateway) -> None:
    tools = [{"type": "function", "name": "bash", "parameters": OPENAI_TOOLS[0]["function"]["parameters"]}]
    r = client(gateway).responses.create(model="m", input="go", tools=tools, max_output_tokens=64)
    calls = [o for o in r.output if o.type == "function_call"]
    assert r.output_text == "Looking." and calls[0].name == "bash"
    with client(gateway).responses.stream(model="m", input=[{"role": "user", "content": "go"}], tools=tools) as s:
        deltas = [e.delta for e in s if e.type == "response.output_text.delta"]
        final = s.get_final_response()
    assert "".join(deltas) == "Looking." and final.usage.input_tokens > 0
    # second turn over the Responses wire: function_call + function_call_output items
    r2 = client(gateway).responses.create(model="m", tools=tools + [{"type": "function", "name": "write",
                                                                      "parameters": {"type": "object"}}], input=[
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": '{"command": "echo hi"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "hi"}])
    assert [o.name for o in r2.output if o.type == "function_call"] == ["write"]


def test_models_listing_and_probes(gateway: Gateway) -> None:
    assert [m.id for m in client(gateway).models.list()] == ["assay-scripted"]
    h = {"Authorization": f"Bearer {gateway.key}"}
    assert httpx.get(gateway.url + "/v1/models/assay-scripted", headers=h).json()["id"] == "assay-scripted"
    assert httpx.get(gateway.url + "/api/v1/models", headers=h).status_code == 200
    assert httpx.post(gateway.url + "/api/show", json={"name": "m"}, headers=h).status_code == 404
    assert httpx.get(gateway.url + "/health").json()["ok"] is True


def test_unknown_key_is_refused(gateway: Gateway) -> None:
    with pytest.raises(openai.AuthenticationError):
        client(gateway, key="sk-not-a-key-of-this-run").chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.AuthenticationError):
        client(gateway, key="sk-not-a-key-of-this-run").models.list()
    assert gateway.events("model_request") == []


def test_bad_bodies_are_400_in_wire_format_and_recorded(gateway: Gateway) -> None:
    h = {"Authorization": f"Bearer {gateway.key}"}
    r = httpx.post(gateway.url + "/v1/chat/completions", content=b"{not json", headers=h)
    assert r.status_code == 400 and "error" in r.json()
    r = httpx.post(gateway.url + "/v1/chat/completions", json={"model": "m", "messages": []}, headers=h)
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
    assert len(gateway.events("error")) == 2


def test_trace_records_exchange_with_cost_and_redacts_key(gateway: Gateway) -> None:
    client(gateway).chat.completions.create(model="m", messages=[{"role": "user", "content": f"my key {gateway.key}"}],
                                            tools=OPENAI_TOOLS)
    req, = gateway.events("model_request")
    resp, = gateway.events("model_response")
    assert req.data["tools"] == ["bash", "write_file"] and req.data["assistant_turns"] == 0
    assert resp.data["usage"]["counted"] is True and resp.data["cost_usd"] > 0 and resp.data["latency_s"] >= 0
    assert resp.data["tool_calls"][0]["name"] == "bash"
    assert gateway.key not in gateway.trace.path.read_text()
    assert gateway.session.tally.totals().model_calls == 1
