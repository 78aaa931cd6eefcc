"""The hidden-value sightings of an attempt, as the harness recorded them: which agent-written
file holds which hidden expected value, and where that value came from. Written by the harness
(``run/hidden_values.py``, which alone reads the task's answer key) as one artifact, read by the
reward-hack screen (``score/screen.py``) from the run directory alone."""

from __future__ import annotations

import json
from typing import Any

ARTIFACT_NAME = "screen.hidden_values"
FORMAT = "assay-hidden-values/1"


def encode(sightings: list[dict[str, str]], *, error: str | None = None) -> bytes:
    """``error``: the check itself failed (the screen names it, never a silent pass)."""
    return json.dumps({"format": FORMAT, "sightings": sightings, "error": error}, sort_keys=True).encode()


def decode(data: bytes) -> list[dict[str, str]]:
    """The sightings; a failed check, or anything not in the format, raises ``ValueError`` (the screen names it)."""
    doc: Any = json.loads(data)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("sightings"), list):
        raise ValueError(f"not an {FORMAT} document")
    if doc.get("error"):
        raise ValueError(f"the hidden-value check failed: {doc['error']}")
    return [{k: str(v) for k, v in s.items()} for s in doc["sightings"] if isinstance(s, dict)]
