"""JSON the agent wrote (its files, session logs, stdout, request bodies), parsed in the harness's
own process.

CPython's parser raises ``RecursionError``, not ``ValueError``, for nesting past its depth (about
990 levels), so a reader that catches ``ValueError`` for "unreadable" crashes on such a document,
and a crash is the harness's error (an infra error that hides the agent's failure, or an HTTP 500).
:func:`loads` makes it a ``ValueError`` like any other unreadable document: one ``except
ValueError`` covers both."""

from __future__ import annotations

import json
from typing import Any


def loads(text: str | bytes) -> Any:
    """``json.loads``; too deeply nested is a ``ValueError``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested deeper than the JSON parser takes") from None
