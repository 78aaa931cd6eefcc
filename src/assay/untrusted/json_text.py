"""JSON the agent wrote (its files, session logs, stdout, request bodies), parsed in the harness's
own process.

CPython's parser raises ``RecursionError``, not ``ValueError``, for nesting past its depth (about
990 levels), so a reader that catches ``ValueError`` for "unreadable" crashes on such a document,
and a crash is the harness's error (an infra error that hides the agent's failure, or an HTTP 500).
:func:`loads` makes it a ``ValueError`` like any other unreadable document: one ``except
ValueError`` covers both.

A JSON string may also hold a lone surrogate (``"\\ud800"``), which Python keeps in a ``str``
that no UTF-8 writer accepts: one such line in a session log crashed the run when its trace was
written. :func:`loads` replaces every lone surrogate with U+FFFD, so what it returns can always
be written."""

from __future__ import annotations

import json
import re
from typing import Any

_ESCAPED = re.compile(rb"\\u[dD][89a-fA-F]")
_RAW = re.compile("[\ud800-\udfff]")


def loads(text: str | bytes) -> Any:
    """``json.loads``; too deeply nested is a ``ValueError``; lone surrogates replaced."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than the JSON parser takes") from None
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return _clean(value) if _ESCAPED.search(raw) or (isinstance(text, str) and _RAW.search(text)) else value


def _text(s: str) -> str:
    return s.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if _RAW.search(s) else s


def _clean(value: Any) -> Any:
    """``value`` with every string (keys too) free of lone surrogates; iterative (any depth)."""
    if isinstance(value, str):
        return _text(value)
    if not isinstance(value, (list, dict)):
        return value
    root: list[Any] = [value]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        parent, key, node = stack.pop()
        if isinstance(node, dict):
            new: Any = {}
            for k, v in node.items():
                new[_text(k)] = v
            parent[key] = new
            for k, v in new.items():
                if isinstance(v, str):
                    new[k] = _text(v)
                elif isinstance(v, (list, dict)):
                    stack.append((new, k, v))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if isinstance(v, str):
                    node[i] = _text(v)
                elif isinstance(v, (list, dict)):
                    stack.append((node, i, v))
    return root[0]
