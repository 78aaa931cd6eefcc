"""The wire-format interface (the formats themselves are listed in :mod:`.formats`)."""

from __future__ import annotations

import abc
import json
from typing import Any

from assay.gateway.errors import WireError
from assay.gateway.neutral import ModelReply, ModelRequest

from assay.gateway.stream import Delta, deltas_of


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\n\n").encode()


class StreamRenderer(abc.ABC):
    """Turns the deltas of one answer into this wire format's SSE frames as they arrive."""

    def __init__(self, req: ModelRequest, rid: str):
        self.req = req
        self.rid = rid
        self.model = req.model
        self.started = False

    @abc.abstractmethod
    def feed(self, d: Delta) -> list[bytes]:
        """Frames for one delta (``finish`` deltas render nothing: :meth:`close` does)."""

    @abc.abstractmethod
    def close(self, reply: ModelReply) -> list[bytes]:
        """The closing frames, from the whole reply as accounted (final usage included)."""


class Wire(abc.ABC):
    """One wire format: request parsing, reply rendering (whole or streamed), error bodies."""

    name: str = ""

    @abc.abstractmethod
    def parse(self, body: dict[str, Any]) -> ModelRequest:
        """The neutral request; raises :class:`WireError` (400) on a body it cannot use."""

    @abc.abstractmethod
    def render(self, reply: ModelReply, req: ModelRequest, rid: str) -> dict[str, Any]:
        """The non-streamed response body."""

    @abc.abstractmethod
    def renderer(self, req: ModelRequest, rid: str) -> "StreamRenderer":
        """A renderer of one streamed answer, delta by delta (pass-through streaming)."""

    def stream(self, reply: ModelReply, req: ModelRequest, rid: str) -> list[bytes]:
        """A whole reply as a list of SSE frames (a list so faults can cut it): the same
        renderer a pass-through stream uses, fed with the reply's deltas."""
        r = self.renderer(req, rid)
        out: list[bytes] = []
        for d in deltas_of(reply):
            out += r.feed(d)
        return out + r.close(reply)

    @abc.abstractmethod
    def error_body(self, e: WireError) -> dict[str, Any]:
        """An error in this wire format's own error shape."""

