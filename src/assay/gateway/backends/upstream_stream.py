"""Reading an upstream's SSE stream into neutral deltas, line by line as it arrives.

OpenAI Chat Completions chunks (usage from the final chunk, asked for with
``stream_options.include_usage``) and Anthropic Messages events (input tokens in
``message_start``, output tokens in ``message_delta``). A stream that ends without its finish
(no ``finish_reason``, no ``message_stop``) is a cut stream and raises.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from assay.gateway.errors import WireError
from assay.gateway.neutral import Usage
from assay.gateway.stream import Delta

OPENAI_FINISH = {"tool_calls": "tool_calls", "function_call": "tool_calls", "length": "length"}
ANTHROPIC_STOP = {"tool_use": "tool_calls", "max_tokens": "length"}
_DECODE = msgspec.json.Decoder().decode


def _data(line: str) -> dict[str, Any] | None:
    if not line.startswith("data:"):
        return None
    raw = line[5:].strip()
    if not raw or raw == "[DONE]":
        return None
    try:
        obj = _DECODE(raw)  # msgspec: 3x json's speed on the frames of every stream
    except msgspec.DecodeError:
        obj = _json_loads(raw)  # what it refuses, json decides (it takes NaN, say), with its own error
    if not isinstance(obj, dict):
        raise WireError(502, "upstream_malformed", f"the upstream sent a stream frame that is not an object: {raw[:200]}")
    return obj


def _json_loads(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise WireError(502, "upstream_malformed", f"the upstream sent a stream frame that is not JSON: {raw[:200]}") from None


class OpenAIStreamParser:
    def __init__(self) -> None:
        self.started = False
        self.finish = ""
        self.usage: Usage | None = None
        self.tools: set[int] = set()

    def line(self, line: str) -> list[Delta]:
        obj = _data(line)
        if obj is None:
            return []
        if obj.get("error"):
            raise WireError(502, "upstream_error", json.dumps(obj["error"])[:1000])
        out: list[Delta] = []
        if not self.started:
            self.started = True
            out.append(Delta("start", model=str(obj.get("model") or "")))
        for ch in obj.get("choices") or []:
            delta = ch.get("delta") or {}
            if delta.get("content"):
                out.append(Delta("text", text=delta["content"]))
            for tc in delta.get("tool_calls") or []:
                i, fn = int(tc.get("index", 0)), tc.get("function") or {}
                if i not in self.tools:
                    self.tools.add(i)
                    out.append(Delta("tool_start", index=i, id=str(tc.get("id") or ""), name=str(fn.get("name") or "")))
                if fn.get("arguments"):
                    out.append(Delta("tool_args", index=i, text=fn["arguments"]))
            if ch.get("finish_reason"):
                self.finish = OPENAI_FINISH.get(ch["finish_reason"], "stop")
        u = obj.get("usage")
        if isinstance(u, dict):
            self.usage = Usage(int(u.get("prompt_tokens") or 0), int(u.get("completion_tokens") or 0),
                               int((u.get("prompt_tokens_details") or {}).get("cached_tokens") or 0))
        return out

    def end(self) -> list[Delta]:
        if not self.finish:
            raise WireError(502, "upstream_cut", "the upstream stream ended without a finish_reason")
        return [Delta("finish", finish_reason=self.finish, usage=self.usage)]


class AnthropicStreamParser:
    def __init__(self) -> None:
        self.finish = ""
        self.stopped = False
        self.input = self.output = self.cached = 0
        self.tool_of_block: dict[int, int] = {}

    def line(self, line: str) -> list[Delta]:
        obj = _data(line)
        if obj is None:
            return []
        kind = obj.get("type")
        if kind == "message_start":
            m = obj.get("message") or {}
            u = m.get("usage") or {}
            self.input, self.cached = int(u.get("input_tokens") or 0), int(u.get("cache_read_input_tokens") or 0)
            return [Delta("start", model=str(m.get("model") or ""), usage=Usage(self.input, 0, self.cached))]
        if kind == "content_block_start":
            cb = obj.get("content_block") or {}
            if cb.get("type") == "tool_use":
                i = self.tool_of_block[int(obj.get("index", 0))] = len(self.tool_of_block)
                return [Delta("tool_start", index=i, id=str(cb.get("id") or ""), name=str(cb.get("name") or ""))]
            return [Delta("text", text=cb["text"])] if cb.get("type") == "text" and cb.get("text") else []
        if kind == "content_block_delta":
            d = obj.get("delta") or {}
            if d.get("type") == "text_delta":
                return [Delta("text", text=str(d.get("text") or ""))]
            if d.get("type") == "input_json_delta":
                i = self.tool_of_block.get(int(obj.get("index", 0)), 0)
                return [Delta("tool_args", index=i, text=str(d.get("partial_json") or ""))]
            return []
        if kind == "message_delta":
            stop = (obj.get("delta") or {}).get("stop_reason")
            if stop:
                self.finish = ANTHROPIC_STOP.get(stop, "stop")
            u = obj.get("usage") or {}
            self.output = int(u.get("output_tokens") or self.output)
            self.input = int(u.get("input_tokens") or self.input)
            return []
        if kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise WireError(502, "upstream_error", json.dumps(obj.get("error"))[:1000])
        return []

    def end(self) -> list[Delta]:
        if not self.stopped:
            raise WireError(502, "upstream_cut", "the upstream stream ended without message_stop")
        return [Delta("finish", finish_reason=self.finish or "stop", usage=Usage(self.input, self.output, self.cached))]
