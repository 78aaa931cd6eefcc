"""The state after one turn of a conversation: a snapshot of the workspace (copied without
following a link) and what every service reports as it stands, kept until the verifier reads it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.harness.services import ServiceSession
from assay.verify.snapshot import copy_snapshot


@dataclass(frozen=True)
class TurnState:
    """What per-turn predicates read: the workspace copy, the services' state, the trace so far."""

    number: int
    work: Path  # harness-owned copy of the workspace after the turn
    extra: dict[str, Any] = field(default_factory=dict)  # verifier_extra keys as they stood
    end_seq: int = -1  # the last trace event of the turn (per-turn predicates see events up to it)
    skipped_entries: tuple[str, ...] = ()


async def take(number: int, workspace: Path, scratch: Path, sessions: list[ServiceSession]) -> TurnState:
    """Snapshot the state after turn ``number`` under ``scratch/turns/tN``."""
    work = scratch / "turns" / f"t{number}" / "work"
    skipped = copy_snapshot(workspace, work)
    extra: dict[str, Any] = {}
    for sess in sessions:
        extra.update(await sess.checkpoint(f"t{number}"))
    return TurnState(number=number, work=work, extra=extra, skipped_entries=tuple(skipped))


def executed_since(extra: dict[str, Any], before: int) -> tuple[list[str], int]:
    """World tools executed after the first ``before`` recorded calls; and the count now."""
    calls = [c for c in extra.get("tool_calls") or [] if isinstance(c, dict)]
    return [str(c.get("name")) for c in calls[before:] if c.get("executed")], len(calls)
