"""Pass-through streaming against a real upstream server on loopback: chunks reach the agent
before the upstream has sent its last one, and the accounting, trace and recording still name
exactly what the upstream reported and what the agent received."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, Iterator

import anthropic
import httpx
import openai
import pytest

from assay.records.manifest import GatewayRecord
from assay.spec.budget import Budget
from tests.gateway.conftest import Gateway, start_gateway
from tests.gateway.fake_upstream import Upstream, _pieces

KEY = "sk-front-stream-0123456789abcdef"
TOOL = ("bash", {"command": "ls -la"})
ROUTES = {"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses", "anthropic": "/v1/messages"}


def body_for(wire: str, stream: bool = True) -> dict[str, Any]:
    if wire == "openai-chat":
        return {"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": stream,
                "stream_options": {"include_usage": True}} if stream else \
            {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    if wire == "openai-responses":
        return {"model": "m", "input": "go", "stream": stream}
    return {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "go"}], "stream": stream}


def gateway_on(tmp_path: Path, up: Upstream, api: str, **settings: Any) -> Gateway:
    base = up.url + "/v1" if api == "openai" else up.url
    rec = GatewayRecord(backend="upstream", model="up-model", settings={"base_url": base, "api": api, **settings},
                        prices={"up-model": {"input": 3.0, "output": 15.0}})
    return start_gateway(tmp_path, rec, key=KEY, session_kwargs={"recording": tmp_path / "gateway.session.jsonl"})


@pytest.fixture
def held() -> Iterator[Upstream]:
    up = Upstream(hold=True, tool=TOOL).start()
    yield up
    up.release()
    up.stop()


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("wire", list(ROUTES))
def test_chunks_pass_through_before_the_upstream_finishes(tmp_path: Path, held: Upstream, api: str, wire: str) -> None:
    gw = gateway_on(tmp_path, held, api)
    try:
        received = b""
        with httpx.Client(timeout=20, trust_env=False) as c, \
                c.stream("POST", gw.url + ROUTES[wire], json=body_for(wire), headers={"Authorization": f"Bearer {KEY}"}) as r:
            assert r.status_code == 200
            chunks = r.iter_raw()
            last_piece = json.dumps(_pieces(held.text)[-1])[1:-1].encode()
            while last_piece not in received:  # the whole text arrives while the upstream still holds its end
                received += next(chunks)
            assert held.last_sent is False
            assert held.answered == 1
            held.release()
            received += b"".join(chunks)
        assert held.last_sent is True
        [ev] = gw.events("model_response")
        s = ev.data["stream"]
        assert s["complete"] is True and s["bytes"] == len(received)
        assert s["sha256"] == hashlib.sha256(received).hexdigest()  # the evidence names exactly what was sent
        assert ev.data["text"] == held.text
        assert [(c["name"], c["arguments"]) for c in ev.data["tool_calls"]] == [TOOL]
        assert ev.data["usage"] == {"input_tokens": held.usage_input, "output_tokens": held.usage_output,
                                    "cached_tokens": 0, "counted": False}  # from the final chunk
        assert gw.session.tally.input_tokens == held.usage_input and gw.session.tally.output_tokens == held.usage_output
        [rec] = [json.loads(line) for line in (tmp_path / "gateway.session.jsonl").read_text().splitlines()]
        assert rec["stream"]["sha256"] == s["sha256"] and rec["reply"]["text"] == held.text
        assert held.bodies[0]["stream"] is True  # really streamed upstream, not one whole call
    finally:
        gw.service.stop_sync()


def test_sdks_reassemble_a_passed_through_stream(tmp_path: Path) -> None:
    up = Upstream(tool=TOOL).start()
    gw = gateway_on(tmp_path, up, "openai")
    try:
        oc = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEY, max_retries=0)
        chunks = list(oc.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], stream=True,
                                                 stream_options={"include_usage": True}))
        text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        assert text == up.text
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (up.usage_input, up.usage_output)
        ac = anthropic.Anthropic(base_url=gw.url, api_key=KEY, max_retries=0)
        with ac.messages.stream(model="m", max_tokens=50, messages=[{"role": "user", "content": "go"}]) as s:
            msg = s.get_final_message()
        assert [b.type for b in msg.content] == ["text", "tool_use"] and msg.content[1].input == TOOL[1]
        assert msg.usage.output_tokens == up.usage_output - chunks[-1].usage.completion_tokens
        assert msg.usage.input_tokens == up.usage_input - chunks[-1].usage.prompt_tokens  # said at the end
    finally:
        gw.service.stop_sync()
        up.stop()


def test_upstream_cut_mid_stream_reaches_the_agent_and_the_evidence(tmp_path: Path) -> None:
    up = Upstream(cut=True).start()
    gw = gateway_on(tmp_path, up, "openai")
    try:
        with pytest.raises(httpx.RemoteProtocolError):
            with httpx.Client(timeout=20, trust_env=False) as c, c.stream(
                    "POST", gw.url + ROUTES["openai-chat"], json=body_for("openai-chat"),
                    headers={"Authorization": f"Bearer {KEY}"}) as r:
                b"".join(r.iter_raw())
        [ev] = gw.events("model_response")
        assert ev.data["stream"]["complete"] is False and "upstream_cut" in ev.data["stream"]["problem"]
        assert [e.data["reason"] for e in gw.events("error")] == ["backend_stream"]
    finally:
        gw.service.stop_sync()
        up.stop()


def test_accounting_under_concurrency_64_equals_the_upstreams_usage(tmp_path: Path) -> None:
    up = Upstream(tool=TOOL).start()
    gw = gateway_on(tmp_path, up, "openai")
    wires = list(ROUTES)

    async def one(c: httpx.AsyncClient, i: int) -> int:
        wire = wires[i % 3]
        stream = i % 2 == 0
        r = await c.post(gw.url + ROUTES[wire], json=body_for(wire, stream), headers={"Authorization": f"Bearer {KEY}"})
        return r.status_code

    async def main() -> list[int]:
        limits = httpx.Limits(max_connections=64)
        async with httpx.AsyncClient(timeout=60, trust_env=False, limits=limits) as c:
            return await asyncio.gather(*(one(c, i) for i in range(64)))

    try:
        assert asyncio.run(main()) == [200] * 64
        t = gw.session.tally
        assert (t.calls, t.answered, up.answered) == (64, 64, 64)
        assert (t.input_tokens, t.output_tokens) == (up.usage_input, up.usage_output)
        evs = gw.events("model_response")
        assert len(evs) == 64 and sum(e.data["usage"]["input_tokens"] for e in evs) == up.usage_input
        assert abs(t.cost_usd - (up.usage_input * 3.0 + up.usage_output * 15.0) / 1e6) < 1e-9
    finally:
        gw.service.stop_sync()
        up.stop()


@pytest.mark.parametrize("stream", [False, True])
def test_upstream_429_and_503_are_retried_and_not_counted_against_the_agent(tmp_path: Path, stream: bool) -> None:
    up = Upstream(fail_first=[429, 429, 503], retry_after="0").start()
    gw = gateway_on(tmp_path, up, "openai", retry={"max_retries": 4, "base_s": 0.001, "max_s": 0.01})
    gw.session.budget = Budget(model_calls=1)  # the retries must not spend the agent's one call
    try:
        oc = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEY, max_retries=0)
        if stream:
            text = "".join(ch.choices[0].delta.content or "" for ch in oc.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], stream=True) if ch.choices)
        else:
            text = oc.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}]).choices[0].message.content
        assert text == up.text
        assert up.requests == 4
        assert (gw.session.tally.calls, gw.session.tally.answered) == (1, 1)
        retries = [e.data for e in gw.events("log") if e.data.get("reason") == "upstream_retry"]
        assert [(r["retry"], r["status"], r["retry_after"]) for r in retries] == [(1, 429, "0"), (2, 429, "0"), (3, 503, "0")]
        assert gw.events("error") == [] and gw.events("budget_exceeded") == []
    finally:
        gw.service.stop_sync()
        up.stop()


def test_retries_exhausted_answer_the_upstreams_429(tmp_path: Path) -> None:
    up = Upstream(fail_first=[429] * 5, retry_after="0").start()
    gw = gateway_on(tmp_path, up, "anthropic", retry={"max_retries": 2, "base_s": 0.001, "max_s": 0.01})
    try:
        ac = anthropic.Anthropic(base_url=gw.url, api_key=KEY, max_retries=0)
        with pytest.raises(anthropic.RateLimitError):
            ac.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}])
        assert up.requests == 3  # the first try and two retries, then the 429 is the agent's answer
        assert [e.data["status"] for e in gw.events("error")] == [429]
        assert gw.session.tally.answered == 0
    finally:
        gw.service.stop_sync()
        up.stop()


def test_a_streamed_scripted_answer_keeps_its_backend_facts(gateway: Gateway) -> None:
    # a streamed answer of a non-streaming backend goes through the same deltas: its facts
    # (the script turn, a script problem) still reach the trace and the recording
    with httpx.Client(timeout=20, trust_env=False) as c:
        r = c.post(gateway.url + "/v1/chat/completions", headers={"Authorization": f"Bearer {gateway.key}"},
                   json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}],
                         "tools": [{"type": "function", "function": {"name": "nothing_known", "parameters": {}}}]})
    assert r.status_code == 200 and b"[DONE]" in r.content
    [ev] = gateway.events("model_response")
    assert ev.data["extra"]["turn"] == 0 and "error" in ev.data["extra"]
    assert ev.data["stream"]["sha256"] == hashlib.sha256(r.content).hexdigest()
    assert [e.data["reason"] for e in gateway.events("error")] == ["backend"]


def _past_the_tool_budget(meter_owner: Any) -> None:
    from assay.harness.budget import BudgetMeter

    meter_owner.meter = BudgetMeter(Budget(tool_calls=1))


CHAT_TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {
        "file_path": {"type": "string"}, "content": {"type": "string"}}}}}]
AFTER_ONE_CALL = [{"role": "user", "content": "go"},
                  {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                      "name": "bash", "arguments": "{}"}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "ok"}]


def test_a_complete_backend_refuses_a_streamed_reply_past_the_budget_before_the_first_byte(gateway: Gateway) -> None:
    """The scripted answer is known before anything is sent: the agent's SDK gets HTTP 400
    ``budget_exceeded`` on the request itself (never a refusal mid-stream, which Hermes retries)."""
    _past_the_tool_budget(gateway.session)
    oc = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0)
    first = list(oc.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}], tools=CHAT_TOOLS,
                                            stream=True))
    assert any(ch.choices and ch.choices[0].delta.tool_calls for ch in first)  # one call: within the budget
    with pytest.raises(openai.BadRequestError) as e:
        oc.chat.completions.create(model="m", messages=AFTER_ONE_CALL, tools=CHAT_TOOLS, stream=True)  # no iteration
    assert e.value.status_code == 400 and "tool_calls budget is spent" in str(e.value)
    assert e.value.response.headers["x-assay-budget"] == "tool_calls"
    assert [e.data["budget"] for e in gateway.events("budget_exceeded")] == ["tool_calls"]
    answered, refused = gateway.events("model_response")
    assert answered.data["stream"]["complete"] is True  # the first streamed answer: its bytes on record
    assert "stream" not in refused.data  # the refused reply: accounted (the model spent it), never sent
    assert gateway.session.meter.tool_calls == 1


def test_a_complete_backend_refuses_before_the_first_byte_for_the_anthropic_sdk(gateway: Gateway) -> None:
    _past_the_tool_budget(gateway.session)
    ac = anthropic.Anthropic(base_url=gateway.url, api_key=gateway.key, max_retries=0)
    tools = [{"name": "bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]
    with ac.messages.stream(model="m", max_tokens=100, tools=tools,  # type: ignore[arg-type]
                            messages=[{"role": "user", "content": "go"}]) as s:
        assert any(b.type == "tool_use" for b in s.get_final_message().content)
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]
    with pytest.raises(anthropic.BadRequestError, match="tool_calls budget is spent"):
        with ac.messages.stream(model="m", max_tokens=100, tools=tools, messages=history):  # type: ignore[arg-type]
            pass  # entering the stream already raised: nothing was streamed
    assert [e.data["budget"] for e in gateway.events("budget_exceeded")] == ["tool_calls"]


def test_a_passed_through_stream_past_the_tool_call_budget_ends_with_the_refusal_in_band(tmp_path: Path) -> None:
    """A real streaming upstream: the tool call is known only once streamed, so the refusal comes
    in-band, in the wire's own error shape, instead of the finish."""
    up = Upstream(tool=TOOL).start()
    gw = gateway_on(tmp_path, up, "openai")
    try:
        _past_the_tool_budget(gw.session)
        oc = openai.OpenAI(base_url=gw.url + "/v1", api_key=KEY, max_retries=0)
        first = list(oc.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}],
                                                tools=CHAT_TOOLS, stream=True))
        assert any(ch.choices and ch.choices[0].delta.tool_calls for ch in first)
        with pytest.raises(openai.APIError, match="tool_calls budget is spent"):
            list(oc.chat.completions.create(model="m", messages=AFTER_ONE_CALL, tools=CHAT_TOOLS, stream=True))
        assert [e.data["budget"] for e in gw.events("budget_exceeded")] == ["tool_calls"]
        last = gw.events("model_response")[-1].data["stream"]
        assert last["complete"] is False and last["problem"] == "budget_exceeded"
        assert gw.session.meter.tool_calls == 1
    finally:
        gw.service.stop_sync()
        up.stop()
