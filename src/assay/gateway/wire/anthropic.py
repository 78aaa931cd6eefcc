"""Anthropic Messages: parse a request, render a reply (JSON or the SSE event sequence).

Unknown body fields (``thinking``, ``output_config``, DSH's ``dsh_session_log``...) are accepted
and ignored.
"""

from __future__ import annotations

import json
from typing import Any

from assay.gateway.errors import WireError, anthropic_error_body
from assay.gateway.neutral import Message, ModelReply, ModelRequest, ToolCall, ToolDef, content_text
from assay.gateway.wire.base import Wire, sse, split_text

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
        tools = tuple(ToolDef(t["name"], t.get("description") or "", t.get("input_schema") or {})
                      for t in body.get("tools") or [] if isinstance(t, dict) and t.get("name"))
        return ModelRequest(wire=self.name, model=str(body.get("model") or ""), messages=tuple(out), tools=tools,
                            tool_choice=body.get("tool_choice"), max_tokens=body.get("max_tokens"),
                            stream=bool(body.get("stream")), include_usage=True, temperature=body.get("temperature"))

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

    def stream(self, reply: ModelReply, req: ModelRequest, rid: str) -> list[bytes]:
        start = self.render(reply, req, rid)
        start.update(content=[], stop_reason=None, usage={**self._usage(reply), "output_tokens": 0})
        out = [sse({"type": "message_start", "message": start}, "message_start")]
        for i, b in enumerate(self._blocks(reply)):
            if b["type"] == "text":
                out.append(sse({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                               "content_block_start"))
                for piece in split_text(b["text"]):
                    out.append(sse({"type": "content_block_delta", "index": i,
                                    "delta": {"type": "text_delta", "text": piece}}, "content_block_delta"))
            else:
                out.append(sse({"type": "content_block_start", "index": i,
                                "content_block": {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}},
                               "content_block_start"))
                for piece in split_text(json.dumps(b["input"])):
                    out.append(sse({"type": "content_block_delta", "index": i,
                                    "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta"))
            out.append(sse({"type": "content_block_stop", "index": i}, "content_block_stop"))
        out.append(sse({"type": "message_delta",
                        "delta": {"stop_reason": STOP.get(reply.finish_reason, "end_turn"), "stop_sequence": None},
                        "usage": {"output_tokens": reply.usage.output_tokens}}, "message_delta"))
        out.append(sse({"type": "message_stop"}, "message_stop"))
        return out

    def error_body(self, e: WireError) -> dict[str, Any]:
        return anthropic_error_body(e)
