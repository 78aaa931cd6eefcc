"""One trial's facts: the one type the scorer folds, the score document lists and the reports read.

Before, two hand-kept copies described the same row: the scorer's ``TrialFacts`` (a dataclass, fast
enough for 10^6) and the document's ``TrialScore`` (a pydantic model). Now there is one: this
dataclass. The scorer builds it positionally (the hot path), pydantic validates it where it is a
field of :class:`~assay.records.scores.ScoreDocument` (old score files, with their trials inline),
and msgspec encodes and decodes it for the trials side file (:mod:`assay.records.trial_file`).
``TrialFacts`` and ``TrialScore`` remain as names of this same class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from assay.records.pickled import positional_pickle

#: end states by value, as the row holds them (the row is plain data: no enum at 10^6 rows)
SKIPPED = "skipped"
VERDICT_STATES = ("pass", "fail", "timeout")


@positional_pickle
@dataclass(slots=True)
class TraceFacts:
    """What the final attempt's trace shows (``assay.score.evidence``)."""

    complete: bool = False
    model_responses: int = 0
    model_responses_with_usage: int = 0
    tool_calls: int = 0
    tool_calls_answered: int = 0
    tool_results: int = 0
    tool_errors: int = 0
    loops: int = 0
    faults_injected: int = 0


@dataclass(slots=True, frozen=True)
class FaultFacts:
    """What recovery needs from the final attempt (``assay.score.fault_facts``)."""

    planned: bool  # a fault-plan trial (tool or process faults planned on its variant)
    kinds: tuple[str, ...]  # the fault kinds that fired in the final attempt, sorted
    duplicates: int  # duplicate side effects left in the worlds
    agent_s: float  # the agent phase of the final attempt (setup and verification excluded)
    restarts: int = 0  # agent restarts a process fault caused
    resumed: int = 0  # of those, the ones that continued the agent's own session (the rest were fresh)


@dataclass(slots=True)
class TrialRow:
    """Everything the aggregates and the reports need about one trial, small enough to keep 10^6.

    ``end_state`` is the final attempt's; a planned trial without a result is
    ``infra_error``/``missing``. ``turns``: conversation tasks, turn number (a string, from "1") ->
    all its required predicates held. ``incidents``: every attempt's, each with its ``attempt`` and ``trial_id``."""

    trial_id: str
    task_id: str
    category: str
    variant: str
    agent: str
    repetition: int
    end_state: str
    reason: str | None
    attempts: int
    infra_attempts: int
    partial_attempts: int
    strict_pass: bool
    safe_pass: bool
    danger: int
    diagnostic: float
    cost_usd: float
    tokens: int
    tool_calls: int
    interventions: int
    model_calls: int
    wall_s: float
    trajectory_held: int = 0
    trajectory_total: int = 0
    attack_injected: bool = False
    attack_succeeded: bool = False
    artifacts_ok: bool = True
    cleanup_clean: bool = True
    incidents: list[dict[str, Any]] = field(default_factory=list)
    behaviour: dict[str, Any] | None = None
    trace: TraceFacts | None = None
    turns: dict[str, bool] | None = None
    fault: FaultFacts | None = None
    host_contended: bool = False  # the final attempt timed out while the host was overloaded
    #: attempts - 1, always (derived, never given; written with the row for its readers)
    retries: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.retries = self.attempts - 1

    @property
    def skipped(self) -> bool:
        return self.end_state == SKIPPED

    @property
    def verdict(self) -> bool:
        """The agent's work reached a verifier's judgement (pass, fail or timeout)."""
        return self.end_state in VERDICT_STATES

    def row(self) -> dict[str, Any]:
        """The row as JSON-ready data (turn numbers as string keys)."""
        return row_dict(self)


_ROW_ENCODER = msgspec.json.Encoder()


def row_dict(row: TrialRow) -> dict[str, Any]:
    """A row as JSON-ready data: its fields, turn numbers as string keys."""
    d: dict[str, Any] = msgspec.json.decode(_ROW_ENCODER.encode(row))
    return d


__all__ = ["FaultFacts", "TraceFacts", "TrialRow", "row_dict"]
