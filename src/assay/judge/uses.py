"""Where a task asks the judge: its final predicates and every conversation turn's.

One answer for every place that must know (the run's refusal without ``--judge-model``, the
judge service opening a session for an attempt, the run budget's count of judged trials, and
``assay validate``'s calibration check), so a judge inside a turn is never missed by one of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.spec.judge import JudgeCheck
from assay.spec.task import TaskSpec


@dataclass(frozen=True)
class JudgeUse:
    """One judge predicate and the field of ``task.yaml`` that declares it."""

    check: JudgeCheck
    field: str  # e.g. ``predicates.1`` or ``conversation.turns.0.predicates.2``
    turn: int | None = None  # the live turn (from 1) whose state it judges; None: the final state


def judge_uses(spec: TaskSpec) -> list[JudgeUse]:
    """Every judge predicate of the task, final ones first, then each turn's in order."""
    out = [JudgeUse(p, f"predicates.{i}") for i, p in enumerate(spec.predicates) if isinstance(p, JudgeCheck)]
    conv = spec.conversation
    for t, turn in enumerate(conv.turns if conv is not None else []):
        out += [JudgeUse(p, f"conversation.turns.{t}.predicates.{i}", t + 1)
                for i, p in enumerate(turn.predicates) if isinstance(p, JudgeCheck)]
    return out


def is_judged(spec: TaskSpec) -> bool:
    """Whether any predicate of the task, in any turn, asks the judge."""
    return bool(judge_uses(spec))
