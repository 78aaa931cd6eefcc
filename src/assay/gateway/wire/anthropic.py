"""Anthropic Messages: parse a request, render a reply (JSON or the SSE event sequence).

Unknown body fields (``thinking``, ``output_config``, DSH's ``dsh_session_log``...) are accepted
and ignored.
"""

from __future__ import annotations

from typing import Any

from assay.gateway.errors import WireError, anthropic_error_body
from assay.gateway.neutral import Message, ModelReply, ModelRequest, ToolCall, Usage
from assay.gateway.stream import Delta
from assay.gateway.wire.base import StreamRenderer, Wire, sse
from assay.gateway.wire.fields import listed, max_tokens, temperature, tool
from assay.trace.content import content_text

STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _message(m: dict[str, Any]) -> list[Message]:
    role = m.get("role")
    if role not in ("user", "assistant"):
        raise WireError(400, "invalid_request_error", f"unknown message role {role!r}")
    content = m.get("content")
    if isinstance(content, str):
        return [Message(role=role, text=content)]
    if not isinstance(content, list):
        raise WireError(400, "invalid_request_error", "message content must be a string or a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for b in content:
        if not isinstance(b, dict):
            continue
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text", "")))
        elif kind == "tool_use":
            calls.append(ToolCall(str(b.get("id", "")), str(b.get("name", "")), b.get("input") or {}))
        elif kind == "tool_result":
            results.append(Message(role="tool", text=content_text(b.get("content")), tool_call_id=b.get("tool_use_id")))
    out: list[Message] = list(results)
    if role == "assistant" or texts or not results:
        out.append(Message(role=role, text="\n".join(texts), tool_calls=tuple(calls)))
    return out


class AnthropicWire(Wire):
    name = "anthropic"

    def parse(self, body: dict[str, Any]) -> ModelRequest:
        msgs = body.get("messages")
        if not isinstance(msgs, list) or not msgs:
            raise WireError(400, "invalid_request_error", "'messages' must be a non-empty list")
        out: list[Message] = []
        system = body.get("system")
        if system:
            out.append(Message(role="system", text=content_text(system)))
        for m in msgs:
            if not isinstance(m, dict):
                raise WireError(400, "invalid_request_error", "each message must be an object")
            out.extend(_message(m))
        tools = tuple(tool(t["name"], t.get("description"), t.get("input_schema"), "tools")
                      for t in listed(body.get("tools"), "tools") if isinstance(t, dict) and t.get("name"))
        return ModelRequest(wire=self.name, model=str(body.get("model") or ""), messages=tuple(out), tools=tools,
                            tool_choice=body.get("tool_choice"), max_tokens=max_tokens(body, "max_tokens"),
                            stream=bool(body.get("stream")), include_usage=True, temperature=temperature(body))

    def _blocks(self, reply: ModelReply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if reply.text:
            blocks.append({"type": "text", "text": reply.text})
        for c in reply.tool_calls:
            blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
        return blocks

    def _usage(self, reply: ModelReply) -> dict[str, Any]:
        u = reply.usage
        return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "cache_read_input_tokens": u.cached_tokens, "cache_creation_input_tokens": 0}

    def render(self, reply: ModelReply, req: ModelRequest, rid: str) -> dict[str, Any]:
        return {"id": f"msg_{rid}", "type": "message", "role": "assistant", "model": reply.model or req.model,
                "content": self._blocks(reply), "stop_reason": STOP.get(reply.finish_reason, "end_turn"),
                "stop_sequence": None, "usage": self._usage(reply)}

    def renderer(self, req: ModelRequest, rid: str) -> "MessagesRenderer":
        return MessagesRenderer(self, req, rid)

    def error_body(self, e: WireError) -> dict[str, Any]:
        return anthropic_error_body(e)


class MessagesRenderer(StreamRenderer):
    """Anthropic's event sequence: message_start, one content block per text run or tool call
    (start, deltas, stop), message_delta with the stop reason and usage, message_stop."""

    def __init__(self, wire: AnthropicWire, req: ModelRequest, rid: str):
        super().__init__(req, rid)
        self.wire = wire
        self.block = -1  # index of the open content block
        self.open_kind = ""  # "text" | "tool" | ""
        self.input_known = False

    def _start(self, d: Delta) -> bytes:
        self.started = True
        self.model = d.model or self.model
        u = d.usage or Usage()
        self.input_known = d.usage is not None
        usage = {"input_tokens": u.input_tokens, "output_tokens": 0, "cache_read_input_tokens": u.cached_tokens,
                 "cache_creation_input_tokens": 0}
        msg = {"id": f"msg_{self.rid}", "type": "message", "role": "assistant", "model": self.model, "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": usage}
        return sse({"type": "message_start", "message": msg}, "message_start")

    def _open(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        out = self._close_block()
        self.block += 1
        self.open_kind = kind
        out.append(sse({"type": "content_block_start", "index": self.block, "content_block": block}, "content_block_start"))
        return out

    def _close_block(self) -> list[bytes]:
        if not self.open_kind:
            return []
        self.open_kind = ""
        return [sse({"type": "content_block_stop", "index": self.block}, "content_block_stop")]

    def feed(self, d: Delta) -> list[bytes]:
        out = [] if self.started else [self._start(d)]
        if d.kind == "text" and d.text:
            if self.open_kind != "text":
                out += self._open("text", {"type": "text", "text": ""})
            out.append(sse({"type": "content_block_delta", "index": self.block,
                            "delta": {"type": "text_delta", "text": d.text}}, "content_block_delta"))
        elif d.kind == "tool_start":
            out += self._open("tool", {"type": "tool_use", "id": d.id, "name": d.name, "input": {}})
        elif d.kind == "tool_args" and d.text:
            out.append(sse({"type": "content_block_delta", "index": self.block,
                            "delta": {"type": "input_json_delta", "partial_json": d.text}}, "content_block_delta"))
        return out

    def close(self, reply: ModelReply) -> list[bytes]:
        out = [] if self.started else [self._start(Delta("start", model=reply.model, usage=reply.usage))]
        out += self._close_block()
        usage: dict[str, Any] = {"output_tokens": reply.usage.output_tokens}
        if not self.input_known:  # the input count arrived only at the end (an OpenAI upstream): say it here
            usage = {"input_tokens": reply.usage.input_tokens, **usage,
                     "cache_read_input_tokens": reply.usage.cached_tokens}
        out.append(sse({"type": "message_delta",
                        "delta": {"stop_reason": STOP.get(reply.finish_reason, "end_turn"), "stop_sequence": None},
                        "usage": usage}, "message_delta"))
        out.append(sse({"type": "message_stop"}, "message_stop"))
        return out
