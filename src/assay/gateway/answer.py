"""What the HTTP layer sends back for one call: whole, as a list of frames, or as a live stream."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator


class LastPiece(bytes):
    """The final piece of a pass-through stream: the HTTP layer sends it together with the end of
    the body (one write to the agent's socket instead of two)."""


@dataclass
class Answer:
    """What the HTTP layer sends back for one call."""

    status: int = 200
    chunks: list[bytes] = field(default_factory=list)
    stream: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    declared_length: int | None = None  # > len(body): the connection drops mid-body (truncation fault)
    body: AsyncIterator[bytes] | None = None  # a pass-through stream, sent chunk by chunk as it is produced

    @staticmethod
    def json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> "Answer":
        return Answer(status, [json.dumps(body).encode()], headers=dict(headers or {}))
