"""Documents written as indented JSON by msgspec: the same values and key order as
``json.dumps(body, indent=1)``, about 10x faster (the standard library's indented encoder is pure
Python, seconds for a score document of 10^4 task rows). Floats are written in their shortest
round-trip form either way (``1e-7`` where ``json`` writes ``1e-07``), text as UTF-8."""

from __future__ import annotations

from typing import Any

import msgspec


def pretty_json(body: Any) -> bytes:
    """``body`` as indented JSON bytes, ending with a newline."""
    return msgspec.json.format(msgspec.json.encode(body), indent=1) + b"\n"
