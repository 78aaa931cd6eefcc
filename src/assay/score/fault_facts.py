"""What recovery needs from one trial's final attempt: its fault plan, the faults that fired,
the duplicate side effects and the agent phase's wall time (kept only for trials that have any
of it, so a run without worlds pays nothing)."""

from __future__ import annotations

from typing import Any

from assay.records.results import AttemptResult
from assay.records.trial_row import FaultFacts

#: the attempt's extra keys the worlds and the trial engine write (docs/recovery.md)
PLAN_KEYS = ("tool_fault_plan", "process_fault_plan")
FIRED_KEYS = ("tool_faults", "process_faults")


def fault_facts(last: AttemptResult) -> FaultFacts | None:
    """The facts of the final attempt, or None when it records nothing about faults or worlds."""
    extra: Any = last.extra
    if not isinstance(extra, dict) or not any(k in extra for k in (*PLAN_KEYS, *FIRED_KEYS, "duplicate_side_effects")):
        return None
    kinds = sorted({str(f.get("kind")) for key in FIRED_KEYS for f in extra.get(key) or [] if isinstance(f, dict)})
    try:
        dups = int(extra.get("duplicate_side_effects") or 0)
    except (TypeError, ValueError):
        dups = 0
    restart = [f.get("restart") for f in extra.get("process_faults") or [] if isinstance(f, dict)]
    return FaultFacts(planned=any(extra.get(k) for k in PLAN_KEYS), kinds=tuple(kinds), duplicates=dups,
                      agent_s=max(0.0, last.timings.agent_s), restarts=sum(1 for r in restart if r),
                      resumed=restart.count("resume"))
