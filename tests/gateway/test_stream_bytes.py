"""The streaming hot path's shortcuts produce the very bytes of the plain code: the chat chunk
encoded with a cached head equals ``sse`` of the whole chunk; the upstream's frames decoded by
msgspec equal json's reading (and what msgspec refuses is decided by json, errors included);
the last piece of a relayed stream ends the HTTP body in the same message."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.gateway.answer import Answer, LastPiece
from assay.gateway.backends.upstream_stream import AnthropicStreamParser, OpenAIStreamParser, _data
from assay.gateway.errors import WireError
from assay.gateway.neutral import Message, ModelReply, ModelRequest, Usage
from assay.gateway.server import _send
from assay.gateway.stream import Delta
from assay.gateway.wire.base import sse
from assay.gateway.wire.openai_chat import FINISH, OpenAIChatWire

texts = st.text(min_size=0, max_size=40)  # unicode, quotes, control characters: json escapes them all


def reference_chunk(rid: str, created: int, model: str, delta: dict[str, Any], finish: str | None) -> bytes:
    return sse({"id": f"chatcmpl-{rid}", "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})


@settings(max_examples=200, deadline=None)
@given(model=texts, first_model=texts, pieces=st.lists(st.tuples(st.sampled_from(["text", "tool_start", "tool_args"]),
                                                                  texts, st.integers(0, 3)), max_size=6),
       finish=st.sampled_from(["stop", "tool_calls", "length", "odd"]))
def test_chat_chunks_are_the_bytes_of_the_whole_chunk(model: str, first_model: str, pieces: list[Any], finish: str) -> None:
    req = ModelRequest(wire="openai-chat", model=model, messages=(Message("user", "go"),), include_usage=True,
                       stream=True)
    r = OpenAIChatWire().renderer(req, "rid0123")
    out = r.feed(Delta("start", model=first_model))
    seen_model = first_model or model
    expected = [reference_chunk("rid0123", r.created, seen_model, {"role": "assistant", "content": ""}, None)]
    for kind, text, i in pieces:
        out += r.feed(Delta(kind, text=text, index=i, id=f"c{i}", name=text))
        if kind == "text" and text:
            expected.append(reference_chunk("rid0123", r.created, seen_model, {"content": text}, None))
        elif kind == "tool_start":
            expected.append(reference_chunk("rid0123", r.created, seen_model, {"tool_calls": [
                {"index": i, "id": f"c{i}", "type": "function", "function": {"name": text, "arguments": ""}}]}, None))
        elif kind == "tool_args" and text:
            expected.append(reference_chunk("rid0123", r.created, seen_model,
                                            {"tool_calls": [{"index": i, "function": {"arguments": text}}]}, None))
    reply = ModelReply(text="", tool_calls=(), finish_reason=finish, usage=Usage(3, 4, 0), model=seen_model)
    tail = r.close(reply)
    expected.append(reference_chunk("rid0123", r.created, seen_model, {}, FINISH.get(finish, "stop")))
    assert out + tail[:1] == expected
    assert tail[-1] == b"data: [DONE]\n\n"


frames = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(obj=st.dictionaries(texts, frames, max_size=4), ascii_only=st.booleans())
def test_frames_decode_as_json_reads_them(obj: dict[str, Any], ascii_only: bool) -> None:
    raw = json.dumps(obj, ensure_ascii=ascii_only)
    assert repr(_data("data: " + raw)) == repr(json.loads(raw))


@pytest.mark.parametrize("raw, message", [
    ("{not json", "not JSON"), ("[1, 2]", "not an object"), ("3", "not an object")])
def test_bad_frames_are_refused_as_before(raw: str, message: str) -> None:
    with pytest.raises(WireError, match=message) as e:
        _data("data: " + raw)
    assert e.value.status == 502 and e.value.type == "upstream_malformed"


def test_what_msgspec_refuses_json_still_reads() -> None:
    assert _data('data: {"x": NaN, "y": Infinity}')["y"] == float("inf")


def test_only_data_lines_carry_anything() -> None:
    """Why the upstream reader may skip every line that is not a data line."""
    for parser in (OpenAIStreamParser(), AnthropicStreamParser()):
        for line in ("", ": keep-alive", "event: message_start", "id: 7", "retry: 10", " data: {}"):
            assert parser.line(line) == []


def test_the_last_piece_ends_the_body_in_the_same_message() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"
        yield LastPiece(b"data: [DONE]\n\n")

    async def other() -> AsyncIterator[bytes]:
        yield b"data: one\n\n"

    def run(gen: AsyncIterator[bytes]) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def send(msg: dict[str, Any]) -> None:
            sent.append(msg)

        asyncio.run(_send(send, Answer(200, stream=True, body=gen)))
        return sent[1:]

    assert [(m["body"], m["more_body"]) for m in run(body())] == [(b"data: one\n\n", True), (b"data: [DONE]\n\n", False)]
    # a stream that ends without its closing frames (cut, or the agent left) still ends the body
    assert [(m["body"], m["more_body"]) for m in run(other())] == [(b"data: one\n\n", True), (b"", False)]
