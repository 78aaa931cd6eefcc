"""The gateway's one internal shape of a model exchange, whatever wire format carried it.

Every wire format (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) is parsed
into a :class:`ModelRequest` and every backend answers a :class:`ModelReply`, which the wire
module renders back. Backends therefore never see a wire format, and a new wire format is one
new module.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolDef:
    """A tool the requesting agent offered the model (its own name and JSON Schema)."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Message:
    """One conversation message: system, user, assistant (maybe with tool calls) or tool result."""

    role: str  # system | user | assistant | tool
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class ModelRequest:
    wire: str  # openai-chat | openai-responses | anthropic
    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDef, ...] = ()
    tool_choice: Any = None
    max_tokens: int | None = None
    stream: bool = False
    include_usage: bool = False
    temperature: float | None = None

    def assistant_turns(self) -> int:
        """How many assistant turns the conversation already holds (the robust turn counter)."""
        return sum(1 for m in self.messages if m.role == "assistant")

    def tool_names(self) -> list[str]:
        return [t.name for t in self.tools]

    def summary(self) -> dict[str, Any]:
        """What a model_request trace event records (not the whole conversation)."""
        last = self.messages[-1] if self.messages else None
        return {"wire": self.wire, "model": self.model, "messages": len(self.messages),
                "assistant_turns": self.assistant_turns(), "tools": self.tool_names(), "stream": self.stream,
                "max_tokens": self.max_tokens, "last_role": last.role if last else None,
                "last_text": (last.text[-500:] if last else "")}


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    counted: bool = False  # True when the gateway estimated tokens itself

    def as_dict(self) -> dict[str, Any]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cached_tokens": self.cached_tokens, "counted": self.counted}


@dataclass(frozen=True)
class ModelReply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"  # stop | tool_calls | length
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # backend facts recorded in the trace (sampling...)

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "finish_reason": self.finish_reason, "model": self.model,
                "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls],
                "usage": self.usage.as_dict(), **({"extra": self.extra} if self.extra else {})}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "ModelReply":
        u = d.get("usage") or {}
        return ModelReply(text=d.get("text", ""), finish_reason=d.get("finish_reason", "stop"), model=d.get("model", ""),
                          tool_calls=tuple(ToolCall(c["id"], c["name"], c.get("arguments") or {})
                                           for c in d.get("tool_calls") or []),
                          usage=Usage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cached_tokens", 0),
                                      bool(u.get("counted", False))))


def estimate_tokens(text: str) -> int:
    """A deliberately simple token estimate (about four characters a token), marked ``counted``."""
    return math.ceil(len(text) / 4) if text else 0


def count_usage(req: ModelRequest, reply: ModelReply) -> Usage:
    """Token usage estimated from the request and reply text, for backends that report none."""
    prompt = "".join(m.text + "".join(json.dumps(c.arguments) + c.name for c in m.tool_calls) for m in req.messages)
    prompt += "".join(t.name + t.description + json.dumps(t.parameters) for t in req.tools)
    out = reply.text + "".join(c.name + json.dumps(c.arguments) for c in reply.tool_calls)
    return Usage(input_tokens=estimate_tokens(prompt), output_tokens=max(1, estimate_tokens(out)), counted=True)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as a dict, whether the wire sent a JSON string or an object."""
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.strip():
        try:
            val = json.loads(raw)
        except ValueError:
            return {"_raw": raw}
        return val if isinstance(val, dict) else {"_value": val}
    return {}
