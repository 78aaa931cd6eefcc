"""The neutral shape of a streamed model answer: deltas in, a whole reply out.

A backend that streams yields :class:`Delta` values as its model produces them; every wire
format renders each delta to its own SSE frames the moment it arrives (pass-through), and a
:class:`ReplyBuilder` folds the same deltas into the :class:`ModelReply` that is accounted,
recorded and traced. A whole reply is turned into deltas by :func:`deltas_of`, so a streamed
answer of a non-streaming backend goes through the very same renderers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from assay.gateway.neutral import ModelReply, ToolCall, Usage, parse_arguments


@dataclass(frozen=True, slots=True)
class Delta:
    """One step of a streamed answer.

    kinds: ``start`` (model, maybe usage known up front), ``text``, ``tool_start`` (index, id,
    name), ``tool_args`` (index, text), ``finish`` (finish_reason and/or usage, maybe partial).
    """

    kind: str
    text: str = ""
    index: int = 0
    id: str = ""
    name: str = ""
    model: str = ""
    finish_reason: str = ""
    usage: Usage | None = None
    extra: dict[str, Any] | None = None  # backend facts for the trace (a scripted turn, an error)


@dataclass
class _Call:
    id: str
    name: str
    args: list[str] = field(default_factory=list)


class ReplyBuilder:
    """Folds deltas into the reply the agent reassembles from them."""

    def __init__(self) -> None:
        self.model = ""
        self.text: list[str] = []
        self.calls: dict[int, _Call] = {}
        self.finish_reason = ""
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cached_tokens: int | None = None
        self.extra: dict[str, Any] = {}

    def feed(self, d: Delta) -> None:
        if d.model and not self.model:
            self.model = d.model
        if d.kind == "text":
            self.text.append(d.text)
        elif d.kind == "tool_start":
            self.calls.setdefault(d.index, _Call(d.id, d.name))
        elif d.kind == "tool_args":
            self.calls.setdefault(d.index, _Call("", "")).args.append(d.text)
        if d.finish_reason:
            self.finish_reason = d.finish_reason
        if d.extra:
            self.extra.update(d.extra)
        if d.usage is not None:  # later reports win field by field (Anthropic: input first, output last)
            u = d.usage
            self.input_tokens = u.input_tokens if u.input_tokens or self.input_tokens is None else self.input_tokens
            self.output_tokens = u.output_tokens if u.output_tokens or self.output_tokens is None else self.output_tokens
            self.cached_tokens = u.cached_tokens if u.cached_tokens or self.cached_tokens is None else self.cached_tokens

    def reply(self) -> ModelReply:
        calls = tuple(ToolCall(c.id, c.name, parse_arguments("".join(c.args))) for _, c in sorted(self.calls.items()))
        finish = self.finish_reason or ("tool_calls" if calls else "stop")
        usage = Usage(self.input_tokens or 0, self.output_tokens or 0, self.cached_tokens or 0)
        return ModelReply(text="".join(self.text), tool_calls=calls, finish_reason=finish, usage=usage, model=self.model,
                          extra=dict(self.extra))


def split_text(text: str, pieces: int = 3) -> list[str]:
    """Cut a text into a few deltas so clients really reassemble a stream."""
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i:i + size] for i in range(0, len(text), size)]


def deltas_of(reply: ModelReply) -> Iterator[Delta]:
    """A whole reply as the deltas a stream of it would carry (text in a few pieces, then calls)."""
    yield Delta("start", model=reply.model, usage=reply.usage)
    for piece in split_text(reply.text):
        yield Delta("text", text=piece)
    for i, c in enumerate(reply.tool_calls):
        yield Delta("tool_start", index=i, id=c.id, name=c.name)
        for piece in split_text(json.dumps(c.arguments)):
            yield Delta("tool_args", index=i, text=piece)
    yield Delta("finish", finish_reason=reply.finish_reason, usage=reply.usage, extra=reply.extra or None)
