"""A number written in a name, a key or data assay did not write itself (an attempt folder, a
ledger key, a Dockerfile's stage index; the token counts and costs of an agent's own session).

``str.isdigit`` is true of more than 0-9: of a superscript two, which ``int`` refuses (the reader
then fails with a traceback), and of an Arabic-Indic one, which ``int`` reads as 1 (another name
for attempt 1). Only the ASCII digits are a number here.
"""

from __future__ import annotations

import math
import re
from typing import Any

#: past any count or amount an attempt could really have: 2^53, the last whole number a float holds
MOST = 2 ** 53
#: digits past any number these names and fields hold (CPython refuses text past 4,300 digits with ValueError)
DIGITS = 30
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def decimal(text: str) -> int | None:
    """The number ``text`` writes in ASCII decimal digits alone (leading zeros allowed, at most
    :data:`DIGITS` of them), else None."""
    return int(text) if len(text) <= DIGITS and text.isascii() and text.isdigit() else None


def canonical_decimal(text: str) -> int | None:
    """:func:`decimal` of a number written as ``str(n)`` writes it (``"01"`` is not 1 here)."""
    n = decimal(text)
    return n if n is not None and (len(text) == 1 or text[0] != "0") else None


def count(value: Any) -> int | None:
    """A whole count of something (tokens, calls) as data the agent wrote gives it: a JSON number or
    ASCII digits, at least 0 and at most :data:`MOST` (a float is cut to its whole part). None for
    anything else: NaN and infinities (Python's JSON reader takes both), a negative or impossibly
    large count, a truth value, text, a list."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else None
    elif isinstance(value, str):
        value = decimal(value.strip())
    return value if isinstance(value, int) and 0 <= value <= MOST else None


def amount(value: Any) -> float | None:
    """An amount (seconds, US dollars) as data the agent wrote gives it: a finite JSON number or a
    plain ASCII decimal, at least 0 and at most :data:`MOST`; None for anything else (see :func:`count`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if 0 <= value <= MOST else None
    if isinstance(value, str):
        text = value.strip()
        value = float(text) if _NUMBER.fullmatch(text) else None
    if not isinstance(value, float) or not math.isfinite(value) or not 0 <= value <= MOST:
        return None
    return value + 0.0  # -0.0 is 0.0


__all__ = ["DIGITS", "MOST", "amount", "canonical_decimal", "count", "decimal"]
