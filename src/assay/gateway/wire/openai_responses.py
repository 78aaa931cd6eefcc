"""OpenAI Responses: parse a request (``input`` items, ``instructions``, function tools) and
render a reply as a response object or its SSE event sequence."""

from __future__ import annotations

import json
import time
from typing import Any

from assay.gateway.errors import WireError, openai_error_body
from assay.gateway.neutral import Message, ModelReply, ModelRequest, ToolCall, parse_arguments
from assay.gateway.stream import Delta
from assay.gateway.wire.base import StreamRenderer, Wire, sse
from assay.gateway.wire.fields import listed, max_tokens, temperature, tool
from assay.trace.content import content_text


def _items(raw: Any) -> list[Message]:
    if isinstance(raw, str):
        return [Message(role="user", text=raw)]
    if not isinstance(raw, list):
        raise WireError(400, "invalid_request_error", "'input' must be a string or a list of items")
    out: list[Message] = []
    for it in raw:
        if not isinstance(it, dict):
            continue
        kind = it.get("type", "message")
        if kind == "message":
            role = it.get("role", "user")
            role = "system" if role == "developer" else role
            out.append(Message(role=role, text=content_text(it.get("content"))))
        elif kind == "function_call":
            call = ToolCall(str(it.get("call_id") or it.get("id") or ""), str(it.get("name", "")),
                            parse_arguments(it.get("arguments")))
            if out and out[-1].role == "assistant":  # consecutive calls belong to one assistant turn
                prev = out.pop()
                out.append(Message(role="assistant", text=prev.text, tool_calls=(*prev.tool_calls, call)))
            else:
                out.append(Message(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            out.append(Message(role="tool", text=content_text(it.get("output")), tool_call_id=it.get("call_id")))
    return out


class OpenAIResponsesWire(Wire):
    name = "openai-responses"

    def parse(self, body: dict[str, Any]) -> ModelRequest:
        if "input" not in body:
            raise WireError(400, "invalid_request_error", "'input' is required")
        msgs = _items(body["input"])
        if body.get("instructions"):
            msgs.insert(0, Message(role="system", text=str(body["instructions"])))
        tools = tuple(tool(t["name"], t.get("description"), t.get("parameters"), "tools")
                      for t in listed(body.get("tools"), "tools")
                      if isinstance(t, dict) and t.get("type") == "function" and t.get("name"))
        return ModelRequest(wire=self.name, model=str(body.get("model") or ""), messages=tuple(msgs), tools=tools,
                            tool_choice=body.get("tool_choice"), max_tokens=max_tokens(body, "max_output_tokens"),
                            stream=bool(body.get("stream")), include_usage=True, temperature=temperature(body))

    def _output(self, reply: ModelReply, rid: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if reply.text:
            out.append({"type": "message", "id": f"msg_{rid}", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
        for i, c in enumerate(reply.tool_calls):
            out.append({"type": "function_call", "id": f"fc_{rid}_{i}", "call_id": c.id, "name": c.name,
                        "arguments": json.dumps(c.arguments), "status": "completed"})
        return out

    def render(self, reply: ModelReply, req: ModelRequest, rid: str) -> dict[str, Any]:
        u = reply.usage
        return {"id": f"resp_{rid}", "object": "response", "created_at": int(time.time()), "status": "completed",
                "model": reply.model or req.model, "output": self._output(reply, rid), "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
                "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                          "total_tokens": u.input_tokens + u.output_tokens,
                          "input_tokens_details": {"cached_tokens": u.cached_tokens},
                          "output_tokens_details": {"reasoning_tokens": 0}}}

    def renderer(self, req: ModelRequest, rid: str) -> "ResponsesRenderer":
        return ResponsesRenderer(self, req, rid)

    def error_body(self, e: WireError) -> dict[str, Any]:
        return openai_error_body(e)


class ResponsesRenderer(StreamRenderer):
    """The Responses event sequence: created, in_progress, per output item (added, deltas, done),
    completed with the whole response; every event numbered."""

    def __init__(self, wire: OpenAIResponsesWire, req: ModelRequest, rid: str):
        super().__init__(req, rid)
        self.wire = wire
        self.seq = 0
        self.created = int(time.time())
        self.items = -1  # output index of the open item
        self.open: dict[str, Any] | None = None  # the open item, as it will be when done
        self.text: list[str] = []

    def _ev(self, kind: str, **data: Any) -> bytes:
        self.seq += 1
        return sse({"type": kind, "sequence_number": self.seq - 1, **data}, kind)

    def _start(self, d: Delta) -> list[bytes]:
        self.started = True
        self.model = d.model or self.model
        pending = {**self.wire.render(ModelReply(model=self.model), self.req, self.rid), "created_at": self.created,
                   "status": "in_progress", "output": [], "usage": None}
        return [self._ev("response.created", response=pending), self._ev("response.in_progress", response=pending)]

    def _close_item(self) -> list[bytes]:
        item, idx = self.open, self.items
        if item is None:
            return []
        self.open = None
        if item["type"] == "message":
            text = "".join(self.text)
            item["content"] = [{"type": "output_text", "text": text, "annotations": []}]
            part = {"type": "output_text", "text": text, "annotations": []}
            out = [self._ev("response.output_text.done", item_id=item["id"], output_index=idx, content_index=0,
                            text=text, logprobs=[]),
                   self._ev("response.content_part.done", item_id=item["id"], output_index=idx, content_index=0,
                            part=part)]
        else:
            out = [self._ev("response.function_call_arguments.done", item_id=item["id"], output_index=idx,
                            arguments=item["arguments"], name=item["name"])]
        return out + [self._ev("response.output_item.done", output_index=idx, item=item)]

    def feed(self, d: Delta) -> list[bytes]:
        out = [] if self.started else self._start(d)
        if d.kind == "text" and d.text:
            if self.open is None or self.open["type"] != "message":
                out += self._close_item()
                self.items += 1
                self.text = []
                mid = f"msg_{self.rid}" if self.items == 0 else f"msg_{self.rid}_{self.items}"
                self.open = {"type": "message", "id": mid, "status": "completed", "role": "assistant", "content": []}
                out.append(self._ev("response.output_item.added", output_index=self.items,
                                    item={**self.open, "status": "in_progress", "content": []}))
                out.append(self._ev("response.content_part.added", item_id=mid, output_index=self.items,
                                    content_index=0, part={"type": "output_text", "text": "", "annotations": []}))
            self.text.append(d.text)
            out.append(self._ev("response.output_text.delta", item_id=self.open["id"], output_index=self.items,
                                content_index=0, delta=d.text, logprobs=[]))
        elif d.kind == "tool_start":
            out += self._close_item()
            self.items += 1
            self.open = {"type": "function_call", "id": f"fc_{self.rid}_{d.index}", "call_id": d.id, "name": d.name,
                         "arguments": "", "status": "completed"}
            out.append(self._ev("response.output_item.added", output_index=self.items,
                                item={**self.open, "status": "in_progress", "arguments": ""}))
        elif d.kind == "tool_args" and d.text and self.open is not None and self.open["type"] == "function_call":
            self.open["arguments"] += d.text
            out.append(self._ev("response.function_call_arguments.delta", item_id=self.open["id"],
                                output_index=self.items, delta=d.text))
        return out

    def close(self, reply: ModelReply) -> list[bytes]:
        out = [] if self.started else self._start(Delta("start", model=reply.model))
        out += self._close_item()
        final = {**self.wire.render(reply, self.req, self.rid), "created_at": self.created}
        return out + [self._ev("response.completed", response=final)]
