"""Redaction: secrets are removed before anything is written (law 8).

The redactor knows the literal secret values of a run (gateway keys, upstream keys, tokens
handed to agents) and a few generic credential shapes. ``scan`` tells which known secrets a
text contains *before* redaction, so leak detectors can raise an incident while the evidence
itself only ever holds the redacted form.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

_GENERIC = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-]{16,}"),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
]
#: a text none of whose generic shapes can match lacks all of these (one search instead of five)
_MAYBE_GENERIC = re.compile(r"sk-|(?i:bearer)|AKIA|gh[pousr]_")

#: levels of nesting kept in trace data (pydantic serialises about 250; the JSON parser takes about 990)
MAX_DEPTH = 64


class Redactor:
    """Replaces known secret values and generic credential shapes in text and JSON data."""

    def __init__(self, secrets: dict[str, str] | None = None, *, generic: bool = True):
        self._lock = threading.Lock()
        self._secrets: dict[str, str] = {}
        self._longest_first: list[tuple[str, str]] = []  # sorted once per new secret, not per text
        self._generic = generic
        for name, value in (secrets or {}).items():
            self.add(name, value)

    def add(self, name: str, value: str) -> None:
        """Register a secret; values shorter than 6 characters are refused (they would redact noise)."""
        if not value or len(value) < 6:
            return
        with self._lock:
            self._secrets[value] = name
            self._longest_first = sorted(self._secrets.items(), key=lambda kv: -len(kv[0]))

    def known(self) -> dict[str, str]:
        """The secrets registered so far, name -> value (handed to another process's redactor)."""
        with self._lock:
            return {name: value for value, name in self._secrets.items()}

    def scan(self, text: str) -> list[str]:
        """Names of the known secrets that appear in ``text``."""
        with self._lock:
            items = list(self._secrets.items())
        return sorted({name for value, name in items if value in text})

    def text(self, text: str) -> str:
        for value, name in self._longest_first:  # a list replaced whole by add(), never changed in place
            if value in text:
                text = text.replace(value, f"[REDACTED:{name}]")
        if self._generic and _MAYBE_GENERIC.search(text):
            for pat in _GENERIC:
                text = pat.sub("[REDACTED]", text)
        return text

    def data(self, value: Any, depth: int = 0) -> Any:
        """Redact every string inside JSON-like data (keys included). Past :data:`MAX_DEPTH`
        levels the rest is replaced by a marker: trace data comes from what the agent wrote, and
        nesting the parser takes (about 990 levels) would break the serialiser or the stack."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
            return f"[nested deeper than {MAX_DEPTH} levels: cut]"
        if isinstance(value, dict):
            return {self.text(str(k)): self.data(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v, depth + 1) for v in value]
        return value

    def json_bytes(self, value: Any) -> bytes:
        return self.text(json.dumps(value, ensure_ascii=False, default=str)).encode()
