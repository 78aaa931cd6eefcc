"""A request body's fields as the agent wrote them, each read as the type its wire declares.

A field of another type is the agent's bad request (HTTP 400 in its wire's shape). Read loosely, it
crashed the gateway's reading (an HTTP 500), or reached a backend that crashed on it (a 502,
recorded as the model backend's failure, which makes the attempt an infrastructure error and
retries it: a malformed request bought the agent another attempt). Elements of a list that are
not objects are passed over, as before.
"""

from __future__ import annotations

import math
from typing import Any

from assay.gateway.errors import WireError
from assay.gateway.neutral import ToolDef

#: more tokens than any model answers with: a larger limit is no limit a real API takes
MOST_TOKENS = 2 ** 31


def bad(what: str) -> WireError:
    return WireError(400, "invalid_request_error", what)


def listed(value: Any, where: str) -> list[Any]:
    """A list field (absent or null: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad(f"'{where}' must be a list")
    return value


def mapping(value: Any, where: str) -> dict[str, Any]:
    """An object field (absent or null: empty)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise bad(f"'{where}' must be an object")
    return value


def tool(name: Any, description: Any, parameters: Any, where: str) -> ToolDef:
    """A tool the agent offers: a name (text), a description (text) and a JSON Schema (an object)."""
    if not isinstance(name, str) or not name:
        raise bad(f"'{where}.name' must be a non-empty string")
    if description is not None and not isinstance(description, str):
        raise bad(f"'{where}.description' must be a string")
    return ToolDef(name, description or "", mapping(parameters, f"{where} parameters"))


def max_tokens(body: dict[str, Any], *keys: str) -> int | None:
    """The answer's token limit: the first of ``keys`` the body sets, a whole number from 1."""
    for key in keys:
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MOST_TOKENS:
            raise bad(f"'{key}' must be a whole number from 1 to {MOST_TOKENS}")
        return value
    return None


def temperature(body: dict[str, Any]) -> float | None:
    """The sampling temperature: a finite number, at least 0 (absent: the backend's own)."""
    value = body.get("temperature")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise bad("'temperature' must be a finite number, at least 0")
    return float(value)


__all__ = ["MOST_TOKENS", "bad", "listed", "mapping", "max_tokens", "temperature", "tool"]
