"""The few figures of a score version the run list shows, decoded without the whole document.

The list shows, per run, the latest score version's number, its security gate, each agent's strict
rate with its interval, gate and cost, and how many passes the screen flagged. Validating the
whole typed document (:func:`assay.score.versions.read_score`) for each of a thousand runs is
most of the list's first open; these fields are decoded by msgspec and the rest is skipped. They
are the typed document's own fields (``tests/view/test_catalog.py`` checks they read the same);
the file is the one sealed in the ledger, checked before it is read."""

from __future__ import annotations

from pathlib import Path

import msgspec

from assay.errors import IntegrityError


class _Gate(msgspec.Struct):
    gate: str = ""


class _Efficiency(msgspec.Struct):
    total_cost_usd: float | None = None


class AgentSummary(msgspec.Struct):
    strict_rate: float | None = None
    strict_ci: list[float | None] = msgspec.field(default_factory=lambda: [None, None])
    security: _Gate = msgspec.field(default_factory=_Gate)
    efficiency: _Efficiency = msgspec.field(default_factory=_Efficiency)


class ScoreSummary(msgspec.Struct):
    security: _Gate
    agents: dict[str, AgentSummary]
    score_version: int | None = None
    suspect_passes: list[msgspec.Raw] = msgspec.field(default_factory=list)


_DECODER = msgspec.json.Decoder(ScoreSummary)


def read_summary(path: Path) -> ScoreSummary:
    """The list's fields of one score file; a file that does not decode raises IntegrityError naming it."""
    try:
        return _DECODER.decode(path.read_bytes())
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise IntegrityError(f"{path}: not a readable score document: {e}") from None
