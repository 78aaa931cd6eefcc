"""One line of a run's ledger (``ledger.jsonl``): a sealed path and its SHA-256, and the one wording
of a line that is not such a record. Every reader of the ledger parses its lines here: the run
directory, the scan's index of sealed files, the seals of the results log."""

from __future__ import annotations

import json

import msgspec

LEDGER = "ledger.jsonl"


class _LedgerLine(msgspec.Struct):
    path: str
    sha256: str


_LEDGER_LINE = msgspec.json.Decoder(_LedgerLine)


def ledger_record(line: str) -> tuple[str, str] | None:
    """(path, sha256) of one ledger line, or None when the line is not such a record."""
    try:
        rec = _LEDGER_LINE.decode(line)
        return rec.path, rec.sha256
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if isinstance(obj, dict) and isinstance(obj.get("path"), str) and isinstance(obj.get("sha256"), str):
        return obj["path"], obj["sha256"]
    return None


def damage_text(n: int, line: str) -> str:
    """The one wording of a damaged ledger line."""
    return f"{LEDGER}: line {n} is not a ledger record (path and sha256 strings): {line[:80]!r}"


__all__ = ["LEDGER", "damage_text", "ledger_record"]
