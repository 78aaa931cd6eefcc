"""The wire-format interface (the formats themselves are listed in :mod:`.formats`)."""

from __future__ import annotations

import abc
import json
from typing import Any

from assay.gateway.errors import WireError
from assay.gateway.neutral import ModelReply, ModelRequest


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\n\n").encode()


def split_text(text: str, pieces: int = 3) -> list[str]:
    """Cut a text into a few deltas so clients really reassemble a stream."""
    if not text:
        return []
    size = max(1, -(-len(text) // pieces))
    return [text[i:i + size] for i in range(0, len(text), size)]


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
    def stream(self, reply: ModelReply, req: ModelRequest, rid: str) -> list[bytes]:
        """The streamed response as a list of SSE frames (a list so faults can cut it)."""

    @abc.abstractmethod
    def error_body(self, e: WireError) -> dict[str, Any]:
        """An error in this wire format's own error shape."""

