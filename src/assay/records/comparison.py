"""The comparison of two runs (``assay.compare/1``) and the report document (``assay.report/1``)
as frozen models, built on the score document's (:mod:`assay.records.scores`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.records.scores import Interval, Isolation, Rate, Record, ScoreDocument, SuiteRef
from assay.spec.judge import JudgeSummary

COMPARE_SCHEMA = "assay.compare/1"
REPORT_SCHEMA = "assay.report/1"


class RunRef(Record):
    run_id: str
    rules_digest: str
    suite: SuiteRef | None = None


class MetricDelta(Record):
    baseline: float | None
    candidate: float | None
    delta: float | None = Field(description="candidate - baseline on the shared units only.")
    ci: Interval | None = Field(description="95 % paired bootstrap interval of the delta.")
    p_sign_test: float
    units: int
    higher_is_better: bool
    moved_beyond_noise: bool
    direction: Literal["improved", "regressed"] | None


class LeftOut(Record):
    agent: str
    task: str
    variant: str
    why: str


class CompareMethod(Record):
    interval: str
    test: str
    moved: str


class GateCheck(Record):
    """One ``--fail-if`` check in one scope, with the figure it read."""

    threshold: str
    reads: str = Field(description="'delta' (point estimate), 'ci.lower' or 'ci.upper' (interval bound), 'gate'.")
    scope: str
    value: float | None
    tripped: bool
    why: str


class GatePair(Record):
    """The security gate of each side (PASSED or FAILED)."""

    baseline: str
    candidate: str


class Flip(Record):
    """A shared unit whose strict result changed between the runs (all passed -> not, or back)."""

    agent: str
    task: str
    variant: str
    baseline: Rate
    candidate: Rate
    direction: Literal["improved", "regressed"]


class Comparison(Record):
    """``assay.compare/1``: two score documents compared on their shared units only."""

    schema_: str = Field(COMPARE_SCHEMA, alias="schema")
    baseline: RunRef
    candidate: RunRef
    agent_pairs: dict[str, str]
    shared_units: int
    paired_by: Literal["task", "task_digest"] = "task"
    left_out: list[LeftOut]
    method: CompareMethod
    metrics: dict[str, MetricDelta]
    by_agent: dict[str, dict[str, MetricDelta]]
    security: GatePair
    notes: list[str]
    thresholds: list[str]
    checks: list[GateCheck] = Field(default_factory=list)
    flipped: list[Flip] = Field(default_factory=list)
    failed: list[str]
    regressed: bool
    nothing_to_compare: str | None = Field(None, description="Why nothing was compared (exit 5), else null.")


class ReportDocument(Record):
    """``assay.report/1``: the isolation note first, the score, an optional comparison with a
    baseline run, and the paired differences between the agents of the run."""

    isolation: Isolation
    schema_: str = Field(REPORT_SCHEMA, alias="schema")
    score: ScoreDocument
    compare: Comparison | None = None
    agents_compared: list[Comparison] = Field(default_factory=list)
    judges: list[JudgeSummary] = Field(default_factory=list, description="Each LLM judge of the run: its "
                                       "calibration figures next to the verdicts it gave.")
