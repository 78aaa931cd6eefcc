"""A decimal number written in a name or a key assay did not write itself (an attempt folder, a
ledger key, a lock file, a Dockerfile's stage index).

``str.isdigit`` is true of more than 0-9: of a superscript two, which ``int`` refuses (the reader
then fails with a traceback), and of an Arabic-Indic one, which ``int`` reads as 1 (another name
for attempt 1). Only the ASCII digits are a number here.
"""

from __future__ import annotations


def decimal(text: str) -> int | None:
    """The number ``text`` writes in ASCII decimal digits alone (leading zeros allowed), else None."""
    return int(text) if text.isascii() and text.isdigit() else None


def canonical_decimal(text: str) -> int | None:
    """:func:`decimal` of a number written as ``str(n)`` writes it (``"01"`` is not 1 here)."""
    n = decimal(text)
    return n if n is not None and (len(text) == 1 or text[0] != "0") else None


__all__ = ["canonical_decimal", "decimal"]
