"""OpenAI Chat Completions: parse a request, render a reply (JSON or SSE chunks)."""

from __future__ import annotations

import json
import time
from typing import Any

from assay.gateway.errors import WireError, openai_error_body
from assay.gateway.neutral import Message, ModelReply, ModelRequest, ToolCall, ToolDef, parse_arguments
from assay.gateway.stream import Delta
from assay.gateway.wire.base import StreamRenderer, Wire, sse
from assay.gateway.wire.fields import listed, mapping, max_tokens, temperature, tool
from assay.trace.content import content_text

FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length"}
_compact = json.JSONEncoder(separators=(",", ":")).encode  # the encoder of wire.base.sse


def _messages(raw: list[Any]) -> tuple[Message, ...]:
    out = []
    for m in raw:
        if not isinstance(m, dict):
            raise WireError(400, "invalid_request_error", "each message must be an object")
        role = m.get("role")
        if role == "developer":
            role = "system"
        if role not in ("system", "user", "assistant", "tool", "function"):
            raise WireError(400, "invalid_request_error", f"unknown message role {role!r}")
        calls = tuple(ToolCall(str(c.get("id", "")), str(fn.get("name", "")), parse_arguments(fn.get("arguments")))
                      for c in listed(m.get("tool_calls"), "tool_calls") if isinstance(c, dict)
                      for fn in (mapping(c.get("function"), "tool_calls.function"),))
        out.append(Message(role="tool" if role == "function" else role, text=content_text(m.get("content")),
                           tool_calls=calls, tool_call_id=m.get("tool_call_id")))
    return tuple(out)


def _tools(raw: list[Any] | None) -> tuple[ToolDef, ...]:
    out = []
    for t in listed(raw, "tools"):
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out.append(tool(fn["name"], fn.get("description"), fn.get("parameters"), "tools.function"))
    return tuple(out)


class OpenAIChatWire(Wire):
    name = "openai-chat"

    def parse(self, body: dict[str, Any]) -> ModelRequest:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise WireError(400, "invalid_request_error", "'messages' must be a non-empty list")
        stream_opts = mapping(body.get("stream_options"), "stream_options")
        return ModelRequest(wire=self.name, model=str(body.get("model") or ""), messages=_messages(msgs),
                            tools=_tools(body.get("tools")), tool_choice=body.get("tool_choice"),
                            max_tokens=max_tokens(body, "max_completion_tokens", "max_tokens"),
                            stream=bool(body.get("stream")), include_usage=bool(stream_opts.get("include_usage")),
                            temperature=temperature(body))

    def _usage(self, reply: ModelReply) -> dict[str, Any]:
        u = reply.usage
        return {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                "total_tokens": u.input_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens}}

    def render(self, reply: ModelReply, req: ModelRequest, rid: str) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                 for c in reply.tool_calls]
        return {"id": f"chatcmpl-{rid}", "object": "chat.completion", "created": int(time.time()),
                "model": reply.model or req.model,
                "choices": [{"index": 0, "message": msg, "finish_reason": FINISH.get(reply.finish_reason, "stop"),
                             "logprobs": None}],
                "usage": self._usage(reply)}

    def renderer(self, req: ModelRequest, rid: str) -> "ChatRenderer":
        return ChatRenderer(self, req, rid)

    def error_body(self, e: WireError) -> dict[str, Any]:
        return openai_error_body(e)


class ChatRenderer(StreamRenderer):
    """Chat Completions chunks: a role chunk, content and tool-call deltas, the finish chunk,
    the usage chunk when asked for (``stream_options.include_usage``), then ``[DONE]``."""

    def __init__(self, wire: OpenAIChatWire, req: ModelRequest, rid: str):
        super().__init__(req, rid)
        self.wire = wire
        self.created = int(time.time())
        self._head: tuple[str, bytes] | None = None  # (model, the encoded chunk up to its delta)

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> bytes:
        """``sse`` of the whole chunk, byte for byte, with the part before the delta encoded once
        per answer (json.dumps of a dict is the concatenation of its keys' and values' encodings)."""
        if self._head is None or self._head[0] != self.model:
            head = sse({**self._base(), "choices": [{"index": 0, "delta": {}}]})
            self._head = (self.model, head[: head.rindex(b"{}")])
        tail = b',"finish_reason":null,"logprobs":null}]}\n\n' if finish is None else (
            b',"finish_reason":' + _compact(finish).encode() + b',"logprobs":null}]}\n\n')
        return self._head[1] + _compact(delta).encode() + tail

    def _base(self) -> dict[str, Any]:
        return {"id": f"chatcmpl-{self.rid}", "object": "chat.completion.chunk", "created": self.created,
                "model": self.model}

    def feed(self, d: Delta) -> list[bytes]:
        out: list[bytes] = []
        if not self.started:
            self.started = True
            self.model = d.model or self.model
            out.append(self._chunk({"role": "assistant", "content": ""}))
        if d.kind == "text" and d.text:
            out.append(self._chunk({"content": d.text}))
        elif d.kind == "tool_start":
            out.append(self._chunk({"tool_calls": [{"index": d.index, "id": d.id, "type": "function",
                                                    "function": {"name": d.name, "arguments": ""}}]}))
        elif d.kind == "tool_args" and d.text:
            out.append(self._chunk({"tool_calls": [{"index": d.index, "function": {"arguments": d.text}}]}))
        return out

    def close(self, reply: ModelReply) -> list[bytes]:
        out = [] if self.started else self.feed(Delta("start", model=reply.model))
        out.append(self._chunk({}, FINISH.get(reply.finish_reason, "stop")))
        if self.req.include_usage:
            out.append(sse({**self._base(), "choices": [], "usage": self.wire._usage(reply)}))
        out.append(b"data: [DONE]\n\n")
        return out
