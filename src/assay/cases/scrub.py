"""Redaction of imported production traces: before a candidate case is written (law 8).

The run redactor (:class:`assay.trace.redact.Redactor`) removes the credential shapes it knows
(API keys, bearer tokens, cloud and forge tokens) and any literal secret the caller names; on
top of it, production text needs planted-canary shapes, ``NAME=secret`` assignments, JWTs,
e-mail addresses, payment card numbers (Luhn-valid, so an order number is kept) and phone
numbers removed. Each rule has a stable id; a candidate records the
rules that ran and how often each one fired, never what it removed.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from assay.trace.redact import Redactor

CARD = "[REDACTED:card]"


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum every payment card number carries (test cards included)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(m: re.Match[str]) -> str:
    digits = re.sub(r"[ -]", "", m.group(0))
    return CARD if 13 <= len(digits) <= 19 and luhn_ok(digits) else m.group(0)


#: (rule id, pattern, replacement); applied in order after the run redactor's credential shapes
RULES: list[tuple[str, re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    ("canary", re.compile(r"\bcnry_[A-Za-z0-9]{8,}\b"), "[REDACTED:canary]"),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "[REDACTED:jwt]"),
    # from the keyword on: the name before it is kept as it is, outside the match (a leading
    # ``\b[\w-]*`` made every word start of ``a-a-a-…`` scan the rest of the run: 40 KB took 44 s;
    # such a start always exists, so the same assignments are scrubbed to the same text)
    ("assignment", re.compile(r"(?i)((?:api[_-]?key|token|secret|passw(?:or)?d|credential)s?)(\s*[:=]\s*)"
                              r"(?!\[REDACTED)[\"']?[^\s\"',;]{6,}[\"']?"), r"\1\2[REDACTED:assignment]"),
    ("email", re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"), "[REDACTED:email]"),
    ("card", re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])"), _card),
    ("phone", re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .-]?\(?\d{1,4}\)?(?:[ .-]?\d{2,4}){2,4}"
                         r"|\(\d{3}\)\s?\d{3}[ .-]\d{4}|\d{3}[ .-]\d{3}[ .-]\d{4}|1[3-9]\d{9})(?![\w])"), "[REDACTED:phone]"),
]
CREDENTIAL_RULE = "credential_shapes"
LITERAL_RULE = "named_secret"


class Scrubber(Redactor):
    """Redacts text and JSON-like data (``data`` is the run redactor's), counting each rule's hits."""

    def __init__(self, secrets: dict[str, str] | None = None):
        super().__init__(secrets, generic=False)
        self._shapes = Redactor(generic=True)
        self.hits: dict[str, int] = {}

    def _count(self, rule: str, n: int) -> None:
        if n:
            self.hits[rule] = self.hits.get(rule, 0) + n

    def text(self, text: str) -> str:
        before = text.count("[REDACTED")
        text = super().text(text)
        self._count(LITERAL_RULE, text.count("[REDACTED") - before)
        before = text.count("[REDACTED")
        text = self._shapes.text(text)
        self._count(CREDENTIAL_RULE, text.count("[REDACTED") - before)
        for rule, pat, repl in RULES:
            before = text.count("[REDACTED")
            text = pat.sub(repl, text)
            self._count(rule, text.count("[REDACTED") - before)  # a card-shaped number failing Luhn is kept
        return text

    def record(self) -> dict[str, Any]:
        """What a candidate keeps about its redaction: the rules that ran and their hit counts."""
        return {"rules": [LITERAL_RULE, CREDENTIAL_RULE, *(r for r, _, _ in RULES)], "hits": dict(sorted(self.hits.items()))}
