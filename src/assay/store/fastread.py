"""Reading result files fast: a msgspec mirror of :class:`~assay.records.results.AttemptResult`.

Parsing with pydantic was most of the scorer's time at 10^6 results. These structs declare the
same fields, types, defaults and constraints, so a file either decodes here into the same values
the pydantic model would hold, or it is handed to pydantic, which parses it (a lax form msgspec
does not take) or refuses it with the usual named error. Nothing msgspec accepts is refused by
pydantic, so the two readers agree on every file (``tests/score/test_fastread.py`` checks the
fields against the model and the scores of random runs against the pydantic reader).

The fold (:func:`assay.score.trials.fold_trial`) reads the same attribute names from either.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import msgspec

from assay.records.results import AttemptResult, EndState, Trust
from assay.spec.budget import BudgetName
from assay.store.rundir import parse_result


class FastPredicate(msgspec.Struct, frozen=True):
    """Mirror of :class:`~assay.records.results.PredicateResult`."""

    id: str
    kind: str
    required: bool
    weight: float
    passed: bool
    evidence: dict[str, Any] = {}
    error: str | None = None
    duration_s: float = 0.0
    trust: Trust | None = None
    turn: Annotated[int, msgspec.Meta(ge=1)] | None = None
    recorded_by: list[str] = []


class FastUsage(msgspec.Struct, frozen=True):
    """Mirror of :class:`~assay.records.results.UsageTotals`."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    tool_calls: int = 0
    turns: int = 0
    interventions: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class FastTimings(msgspec.Struct, frozen=True):
    """Mirror of :class:`~assay.records.results.Timings`."""

    started_at: float
    ended_at: float
    setup_s: float = 0.0
    agent_s: float = 0.0
    verify_s: float = 0.0
    agent_cpu_s: float | None = None
    verify_cpu_s: float | None = None
    host_load_per_cpu: float | None = None
    host_cpu_pressure: float | None = None

    @property
    def wall_s(self) -> float:
        return self.ended_at - self.started_at


class FastIncident(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Mirror of :class:`~assay.records.incident.Incident` (which forbids unknown keys too)."""

    type: str
    severity: Literal["low", "medium", "high", "critical"] = "high"
    summary: str = ""
    evidence: dict[str, Any] = {}

    def model_dump(self) -> dict[str, Any]:
        """The dict pydantic's ``model_dump`` gives, key order included."""
        return {"type": self.type, "severity": self.severity, "summary": self.summary, "evidence": self.evidence}


class FastResult(msgspec.Struct, frozen=True):
    """Mirror of :class:`~assay.records.results.AttemptResult` (unknown keys ignored, as there)."""

    run_id: str
    trial_id: str
    task_id: str
    category: str
    variant: str
    agent: str
    repetition: int
    attempt: int
    end_state: EndState
    timings: FastTimings
    schema_version: int = 1
    reason: str | None = None
    retryable: bool = False
    retry_reason: str | None = None
    partial: bool = False
    predicates_held: bool = False
    diagnostic_score: Annotated[float, msgspec.Meta(ge=0, le=100)] = 0.0
    predicates: list[FastPredicate] = []
    usage: FastUsage = msgspec.field(default_factory=FastUsage)
    agent_exit_code: int | None = None
    agent_claim: str | None = None
    incidents: list[FastIncident] = []
    limits_exceeded: list[str] = []
    budget_exceeded: BudgetName | None = None
    errors: list[str] = []
    artifacts: dict[str, str] = {}
    sandbox: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    host_contended: bool = False

    @property
    def strict_pass(self) -> bool:
        """Pass means the verifier passed it: never the agent's own claim."""
        return self.end_state is EndState.passed


#: what the fold reads: either reader's record
Attempt = Union[AttemptResult, FastResult]

_DECODER = msgspec.json.Decoder(FastResult)


def decode_result(data: bytes, path: Path | str) -> Attempt:
    """One result file's bytes as a record; what msgspec refuses goes to pydantic, which parses it
    or raises :class:`~assay.errors.IntegrityError` naming ``path`` as :func:`read_result` does."""
    try:
        return _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return parse_with_pydantic(data, Path(path))


def parse_with_pydantic(data: bytes, path: Path) -> AttemptResult:
    """The reference reader (the one every other part of assay uses) on bytes already read."""
    return parse_result(data, path)


__all__ = ["Attempt", "FastIncident", "FastPredicate", "FastResult", "FastTimings", "FastUsage", "decode_result",
           "parse_with_pydantic"]
