"""The official anthropic SDK, unchanged, against the gateway: messages with tools, streamed and not."""

from __future__ import annotations

import anthropic
import httpx
import pytest

from tests.gateway.conftest import ANTHROPIC_TOOLS, Gateway


def client(gw: Gateway, key: str | None = None, base: str = "") -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gw.url + base, api_key=key or gw.key, max_retries=0)


def test_messages_tool_use(gateway: Gateway) -> None:
    m = client(gateway).messages.create(model="m", max_tokens=100, messages=[{"role": "user", "content": "go"}],
                                        tools=ANTHROPIC_TOOLS, system="be brief")
    assert m.stop_reason == "tool_use"
    assert [b.type for b in m.content] == ["text", "tool_use"]
    assert m.content[1].name == "bash" and m.content[1].input == {"command": "echo hi"}
    assert m.usage.input_tokens > 0


def test_messages_tool_result_turn_and_stream(gateway: Gateway) -> None:
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                              {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo hi"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]}]
    with client(gateway).messages.stream(model="m", max_tokens=100, messages=msgs, tools=ANTHROPIC_TOOLS) as s:
        final = s.get_final_message()
    use = [b for b in final.content if b.type == "tool_use"]
    assert use[0].name == "write_file" and use[0].input == {"file_path": "out.txt", "content": "ok\n"}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens > 0


def test_alias_route_and_query_string_ignored(gateway: Gateway) -> None:
    m = client(gateway, base="/anthropic").messages.create(model="m", max_tokens=10,
                                                           messages=[{"role": "user", "content": "go"}], tools=ANTHROPIC_TOOLS)
    assert m.content[1].name == "bash"
    r = httpx.post(gateway.url + "/v1/messages?beta=true", headers={"x-api-key": gateway.key, "anthropic-version": "2023-06-01"},
                   json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "go"}],
                         "tools": ANTHROPIC_TOOLS, "thinking": {"type": "enabled"}, "dsh_session_log": {"events": []}})
    assert r.status_code == 200 and r.json()["content"][1]["name"] == "bash"


def test_unknown_key_is_refused_in_anthropic_shape(gateway: Gateway) -> None:
    with pytest.raises(anthropic.AuthenticationError):
        client(gateway, key="sk-ant-wrong-key-000000000").messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
    r = httpx.post(gateway.url + "/v1/messages", headers={"x-api-key": "nope"},
                   json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "go"}]})
    assert r.status_code == 401 and r.json()["type"] == "error"
