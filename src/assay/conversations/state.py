"""The state after one turn of a conversation: a snapshot of the workspace (copied without
following a link) and what every service reports as it stands, kept until the verifier reads it.

The copies live on the host. An agent could fill its workspace to the disk bound before every
turn, so one attempt's copies stay within a byte budget (the run engine passes twice the disk
bound); a turn whose copy would pass it is not kept (:attr:`TurnState.not_kept`), and its
predicates fail."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path

from assay.harness.services import ServiceSession
from assay.records.verifier_inputs import VerifierInputs
from assay.untrusted.tree import walk_untrusted
from assay.verify.snapshot import copy_snapshot


@dataclass(frozen=True)
class TurnState:
    """What per-turn predicates read: the workspace copy, the services' state, the trace so far."""

    number: int
    work: Path  # harness-owned copy of the workspace after the turn
    extra: VerifierInputs = field(default_factory=VerifierInputs)  # the services' verifier inputs as they stood
    end_seq: int = -1  # the last trace event of the turn (per-turn predicates see events up to it)
    skipped_entries: tuple[str, ...] = ()
    not_kept: str | None = None  # why the workspace after this turn was not copied (over the budget)


async def take(number: int, workspace: Path, scratch: Path, sessions: list[ServiceSession], *,
               budget_bytes: int | None = None) -> TurnState:
    """Snapshot the state after turn ``number`` under ``scratch/turns/tN``, unless the workspace
    would take the attempt's turn copies past ``budget_bytes`` (allocated bytes: holes are free)."""
    turns = scratch / "turns"
    work = turns / f"t{number}" / "work"
    not_kept = None
    if budget_bytes is not None:
        need, kept = allocated_bytes(workspace), allocated_bytes(turns)
        if kept + need > budget_bytes:
            not_kept = (f"the workspace after turn {number} ({need} bytes) would take this attempt's turn copies "
                        f"({kept} bytes) past their budget of {budget_bytes} bytes")
    if not_kept is None:
        skipped = copy_snapshot(workspace, work)
    else:
        work.mkdir(parents=True, exist_ok=True)
        skipped = []
    extra = VerifierInputs()
    for sess in sessions:
        extra = extra.merge(await sess.checkpoint(f"t{number}"))
    return TurnState(number=number, work=work, extra=extra, skipped_entries=tuple(skipped), not_kept=not_kept)


def allocated_bytes(root: Path) -> int:
    """Bytes the regular files under ``root`` really occupy (what a sparse-preserving copy writes)."""
    if not root.exists():
        return 0
    return sum(st.st_blocks * 512 for _, _, st in walk_untrusted(root) if st is not None and stat.S_ISREG(st.st_mode))


def executed_since(extra: VerifierInputs, before: int) -> tuple[list[str], int]:
    """World tools executed after the first ``before`` recorded calls; and the count now."""
    calls = [c for c in extra.tool_calls if isinstance(c, dict)]
    return [str(c.get("name")) for c in calls[before:] if c.get("executed")], len(calls)
