"""A real OpenAI-/Anthropic-compatible HTTP server on loopback, standing in for a paid model API.

It answers like the real ones (Chat Completions chunks with a final usage chunk when asked,
Anthropic's event sequence, 429 with Retry-After), counts what it was asked and the usage it
reported, and can hold its last chunk until the test releases it (``hold``), so a test can
prove that chunks passed through before the upstream finished, without any sleep.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from assay.gateway.server import MAX_BODY, ServerThread, lifespan
from assay.untrusted.request_body import read_body


def _sse(obj: dict[str, Any], event: str | None = None) -> bytes:
    return ((f"event: {event}\n" if event else "") + "data: " + json.dumps(obj) + "\n\n").encode()


@dataclass
class Upstream:
    text: str = "Hello from upstream."
    tool: tuple[str, dict[str, Any]] | None = None  # (name, arguments) of one tool call, if any
    fail_first: list[int] = field(default_factory=list)  # statuses answered to the first requests
    retry_after: str = "0"
    hold: bool = False  # keep the last chunk back until release()
    cut: bool = False  # end the stream without its last chunk (a broken upstream)
    requests: int = 0
    answered: int = 0
    usage_input: int = 0
    usage_output: int = 0
    last_sent: bool = False
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.server = ServerThread(self)
        self._lock = threading.Lock()
        self._release: asyncio.Event | None = None

    # ------------------------------------------------------------------ control
    def start(self) -> "Upstream":
        self.server.start()
        self._release = self.server.call(self._make_event())
        return self

    async def _make_event(self) -> asyncio.Event:
        return asyncio.Event()

    def release(self) -> None:
        assert self.server.loop is not None and self._release is not None
        self.server.loop.call_soon_threadsafe(self._release.set)

    def stop(self) -> None:
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url

    # ------------------------------------------------------------------ ASGI
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            return await lifespan(receive, send)
        body, _ = await read_body(receive, MAX_BODY)
        req = json.loads(body or b"{}")
        with self._lock:
            self.requests += 1
            n = self.requests
            self.bodies.append(req)
        if n <= len(self.fail_first):
            status = self.fail_first[n - 1]
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", self.retry_after.encode())]})
            await send({"type": "http.response.body", "body": json.dumps(
                {"error": {"message": "slow down", "type": "rate_limit_error"}}).encode()})
            return
        words = max(1, len(" ".join(str(m.get("content")) for m in req.get("messages", []))) // 4)
        usage_in, usage_out = words + 7 * n, len(self.text) // 3 + n  # distinct per request: sums are meaningful
        with self._lock:
            self.answered += 1
            self.usage_input += usage_in
            self.usage_output += usage_out
        anthropic = scope["path"].endswith("/messages")
        frames = self._anthropic(req, usage_in, usage_out) if anthropic else self._openai(req, usage_in, usage_out)
        if not req.get("stream"):
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": frames[0]})
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        for f in frames[:-2] if self.cut else frames[:-1]:  # a cut stream also loses its finish
            await send({"type": "http.response.body", "body": f, "more_body": True})
        if self.hold:
            assert self._release is not None
            await self._release.wait()
        if self.cut:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        self.last_sent = True
        await send({"type": "http.response.body", "body": frames[-1], "more_body": False})

    def _openai(self, req: dict[str, Any], usage_in: int, usage_out: int) -> list[bytes]:
        model = req.get("model", "up")
        usage = {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out}
        finish = "tool_calls" if self.tool else "stop"
        if not req.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": self.text}
            if self.tool:
                msg["tool_calls"] = [{"id": "call_up_1", "type": "function",
                                      "function": {"name": self.tool[0], "arguments": json.dumps(self.tool[1])}}]
            return [json.dumps({"id": "x", "object": "chat.completion", "model": model, "usage": usage,
                                "choices": [{"index": 0, "message": msg, "finish_reason": finish}]}).encode()]
        base = {"id": "x", "object": "chat.completion.chunk", "model": model}

        def chunk(delta: dict[str, Any], fin: str | None = None) -> bytes:
            return _sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]})

        out = [chunk({"role": "assistant", "content": ""})]
        out += [chunk({"content": w}) for w in _pieces(self.text)]
        if self.tool:
            args = json.dumps(self.tool[1])
            out.append(chunk({"tool_calls": [{"index": 0, "id": "call_up_1", "type": "function",
                                              "function": {"name": self.tool[0], "arguments": ""}}]}))
            out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in _pieces(args)]
        out.append(chunk({}, finish))
        tail = _sse({**base, "choices": [], "usage": usage}) if (req.get("stream_options") or {}).get("include_usage") else b""
        out.append(tail + b"data: [DONE]\n\n")  # the held last chunk carries the usage
        return out

    def _anthropic(self, req: dict[str, Any], usage_in: int, usage_out: int) -> list[bytes]:
        model = req.get("model", "up")
        stop = "tool_use" if self.tool else "end_turn"
        if not req.get("stream"):
            content: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
            if self.tool:
                content.append({"type": "tool_use", "id": "toolu_1", "name": self.tool[0], "input": self.tool[1]})
            return [json.dumps({"id": "msg_x", "type": "message", "role": "assistant", "model": model, "content": content,
                                "stop_reason": stop, "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}).encode()]
        start = {"type": "message_start", "message": {"id": "msg_x", "type": "message", "role": "assistant", "model": model,
                                                      "content": [], "usage": {"input_tokens": usage_in, "output_tokens": 1}}}
        out = [_sse(start, "message_start"),
               _sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}, "content_block_start")]
        out += [_sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
                     "content_block_delta") for p in _pieces(self.text)]
        out.append(_sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        if self.tool:
            out.append(_sse({"type": "content_block_start", "index": 1, "content_block": {
                "type": "tool_use", "id": "toolu_1", "name": self.tool[0], "input": {}}}, "content_block_start"))
            out += [_sse({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}},
                         "content_block_delta") for p in _pieces(json.dumps(self.tool[1]))]
            out.append(_sse({"type": "content_block_stop", "index": 1}, "content_block_stop"))
        out.append(_sse({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage_out}},
                        "message_delta") + _sse({"type": "message_stop"}, "message_stop"))
        return out


def _pieces(text: str, n: int = 4) -> list[str]:
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)]
