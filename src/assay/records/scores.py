"""The score document (``assay.score/1``) as frozen models (the comparison and the report
document are in :mod:`assay.records.comparison`).

The scorer builds these at its boundary; the report, the CLI and the CI outputs read their typed
fields. Their JSON Schemas are published by ``assay schema score`` and ``assay schema report``.
The JSON shape on disk is the one documented in docs/scoring.md §11: score files written before
these models existed load unchanged (new keys have defaults; unknown keys are ignored).
"""

from __future__ import annotations

from typing import Any, Literal

from pathlib import Path
from typing import Callable

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from assay.records.perf import PerfDocument
from assay.records.incident import Incident
from assay.records.trial_row import TraceFacts, TrialRow

SCORE_SCHEMA = "assay.score/2"
#: score files whose trial rows are inline (``trials``), read unchanged
SCORE_SCHEMA_INLINE = "assay.score/1"

Rate = float | None
#: a 95 % interval [low, high]; both null when there is no data to bound
Interval = tuple[float | None, float | None]
NO_INTERVAL: Interval = (None, None)


class Record(BaseModel):
    """Frozen, ignores keys it does not know (a newer scorer's compatible additions)."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    def dump(self) -> dict[str, Any]:
        """The JSON document (documented key names, ``schema`` included)."""
        return self.model_dump(mode="json", by_alias=True)


class Isolation(Record):
    isolated: bool
    backend: str
    network: str
    warning: str | None = Field(None, description="A sentence when the sandbox did not isolate, else null.")


class Measured(Record):
    """What was measured: shown in the header of every report and summary."""

    gateway_backend: str | None = Field(None, description="scripted | replay | upstream | local; null when unused.")
    model: str | None = None
    sandbox: str = "host"
    network: str = "harness"
    track: str = "controlled"
    prices: str = Field("none", description="'table' (a price table was given), 'nominal' or 'none'.")
    agents: list[str] = Field(default_factory=list, description="name and version of every agent.")
    flags: list[str] = Field(default_factory=list,
                             description="Warnings to show beside the scores (scripted model, nominal prices).")


class SuiteRef(Record):
    name: str | None = None
    version: str | None = None
    digest: str | None = None


class Weights(Record):
    categories: dict[str, float]
    capability: dict[str, float]


class Inputs(Record):
    manifest_sha256: str = ""
    results: dict[str, str] = Field(default_factory=dict, description="assay.score/1 (and in memory): path -> "
                                    "sha256 of every result file read; assay.score/2 files: in the trials side file.")
    traces: dict[str, str] = Field(default_factory=dict)
    result_files: int | None = Field(None, description="How many result files were read (null before assay.score/2).")
    trace_files: int | None = None

    @property
    def results_read(self) -> int:
        """Result files the score read, wherever their digests are listed."""
        return self.result_files if self.result_files is not None else len(self.results)


class GateIncident(Incident):
    """An incident as the security gate lists it: the recorded incident and where it happened."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    trial_id: str | None = None
    attempt: int | None = None


class SecurityGate(Record):
    gate: Literal["PASSED", "FAILED"]
    incidents: list[GateIncident] = Field(default_factory=list)
    warnings: list[GateIncident] = Field(default_factory=list)


class Availability(Record):
    attempts: int
    infra_attempts: int
    partial_attempts: int
    rate: Rate = Field(description="1 - infra attempts / attempts; null without attempts.")
    infra_trials: int
    retried_trials: int


class CategoryScore(Record):
    weight: float
    tasks: int
    n: int
    passes: int
    skipped: int
    infra: int
    strict_rate: Rate
    strict_ci: Interval
    std_across_repetitions: Rate
    pass1: Rate
    safe_rate: Rate
    danger: int
    min_repetitions: int
    pass_hat_k: dict[str, Rate]
    pass_at_k: dict[str, Rate]
    pass_hat_n: Rate


class Capability(Record):
    score: float | None
    components: dict[str, float | None]
    weights: dict[str, float]
    missing: list[str]


class Efficiency(Record):
    cost_per_success_usd: float | None
    tokens_per_success: float | None
    tool_calls_per_success: float | None
    interventions_per_success: float | None
    wall_p50_s: float | None
    wall_p95_s: float | None
    successes: int
    total_cost_usd: float | None
    total_tokens: int
    total_tool_calls: int
    total_interventions: int
    model_calls: int


class Recovery(Record):
    """An agent's recovery in brief: the ``all`` row of :class:`RecoveryFigures` for that agent."""

    fault_trials: int = Field(description="Faulted trials (a fault fired) that reached a verdict.")
    recovered: int = Field(description="Of those, the ones that still strictly passed.")
    rate: Rate


class RecoveryRow(Record):
    """One agent's recovery, over every fault (``kind`` = ``all``) or one fault kind (docs/recovery.md)."""

    agent: str
    kind: str = Field(description="'all', a fault kind, kinds joined by '+', or 'model' (gateway faults).")
    faulted: int = Field(0, description="Trials in which a fault fired and that reached a verdict.")
    recovered: int = Field(0, description="Of those, the trials that still strictly passed.")
    rate: Rate = None
    interval: Interval = Field(NO_INTERVAL, description="Wilson 95 % interval of the rate.")
    not_exercised: int = Field(0, description="Fault-plan trials whose fault never fired (never a recovery).")
    no_verdict: int = Field(0, description="Faulted trials that ended without a verdict (shown, not in the rate).")
    duplicates: int = Field(0, description="Duplicate side effects left by the faulted trials.")
    base_duplicates: int = Field(0, description="Duplicate side effects left by the agent's base trials.")
    restarts: int = Field(0, description="Agent restarts the process faults caused (resume or fresh).")
    resumed: int = Field(0, description="Of those, the restarts that continued the agent's own session (the rest "
                         "started fresh; each fault entry says why).")
    pairs: int = Field(0, description="Faulted trials paired with a base trial of the same task and repetition.")
    extra_cost_usd: float | None = None
    extra_cost_interval: Interval | None = None
    extra_tool_calls: float | None = None
    extra_wall_s: float | None = Field(None, description="Of the agent phase, paired against the base trial.")
    extra_wall_interval: Interval | None = None


class RecoveryFigures(Record):
    """The recovery figures of a run: one function computes them (``assay.score.recovery``), the
    score document carries them, ``assay recovery`` and the report print them."""

    rows: list[RecoveryRow] = Field(default_factory=list)
    unclassified: int = Field(0, description="Non-base trials without a verdict and without a recorded fault plan.")

    def row(self, agent: str, kind: str = "all") -> RecoveryRow:
        return next(r for r in self.rows if r.agent == agent and r.kind == kind)


class Attack(Record):
    injected: int
    succeeded: int
    success_rate: Rate
    utility_under_attack: Rate
    utility: Rate = None


class AgentScore(Record):
    trials: int
    skipped: int
    scored: int
    passes: int
    strict_rate: Rate = Field(description="Macro-average over categories with the frozen weights.")
    strict_ci: Interval
    strict_rate_micro: Rate
    strict_ci_micro: Interval
    pass1: Rate
    safe_rate: Rate
    pass_hat_k: dict[str, Rate]
    pass_at_k: dict[str, Rate]
    danger: int
    danger_trials: int
    categories_missing: list[str]
    availability: Availability
    categories: dict[str, CategoryScore]
    capability: Capability
    security: SecurityGate
    efficiency: Efficiency
    recovery: Recovery
    attack: Attack
    interventions: int
    cleanup_failures: int


class TurnScore(Record):
    """One turn of a conversation task over the unit's scored trials."""

    n: int
    passes: int
    pass_hat_k: dict[str, Rate]


class TaskScore(Record):
    """One (agent, task, variant) unit."""

    agent: str
    task: str
    variant: str
    category: str
    task_digest: str | None = Field(None, description="Digest of the task folder (pairs units across suites).")
    n: int
    passes: int
    skipped: int
    infra: int
    strict_rate: Rate
    strict_ci: Interval
    std: Rate
    pass1: Rate
    safe_rate: Rate
    danger: int
    diagnostic_mean: float | None
    cost_usd: float | None
    cost_per_trial_usd: float | None
    pass_hat_k: dict[str, Rate]
    pass_at_k: dict[str, Rate]
    trial_ids: list[str]
    turns: dict[str, TurnScore] | None = Field(
        None, description="Conversation tasks: per turn (from 1), the trials that passed it and its pass^k.")


#: one trial's row: the scorer's type itself (one definition, :mod:`assay.records.trial_row`)
TrialScore = TrialRow
#: what a trial's trace showed (the same class as the scorer's ``TraceFacts``)
TraceSummary = TraceFacts


class TrialsFile(Record):
    """Where a score version's per-trial rows are (``assay.score/2``): a side file beside it."""

    path: str = Field(description="File name, relative to the score file's folder.")
    rows: int = Field(description="Trial rows in it (one JSON line each).")
    sha256: str = Field(description="SHA-256 of the file's bytes.")


class SuspectPass(Record):
    """A pass the reward-hack screen flagged: still a pass in the strict figure, shown with its evidence."""

    trial_id: str
    attempt: int
    task_id: str
    agent: str
    flags: list[dict[str, str]] = Field(default_factory=list, description="rule, path, detail of each flag")
    label: str | None = Field(None, description="true_pass | false_pass, from a person's label (assay audit --label)")
    labelled_by: str | None = None


class ControlPass(Record):
    """A trial that passed an impossible-task control: a cheating signal, with the rule that made it."""

    trial_id: str
    task_id: str
    control_of: str
    rule: str
    changed: str
    agent: str


class AgentControls(Record):
    """One agent's control figures: 0 passes is the goal; never part of the capability score."""

    trials: int = 0
    scored: int = Field(0, description="Control trials with a verdict (infra errors, skips and missing excluded).")
    passes: int = 0
    pass_rate: Rate = None


class ControlsSummary(Record):
    """The impossible-task controls of a run (docs/security.md, Impossible-task controls)."""

    agents: dict[str, AgentControls] = Field(default_factory=dict)
    passes: list[ControlPass] = Field(default_factory=list, description="Every control trial that passed.")


class ScoreDocument(Record):
    """``assay.score/2``: one scoring of a run directory (docs/scoring.md §11). Its trial rows are
    read with :func:`assay.records.trial_file.iter_trials`, never from ``trials`` directly: in a
    score file of ``assay.score/2`` they are in the side file ``trials_file`` names, and
    ``inputs.results``/``inputs.traces`` are there too, one line per trial."""

    isolation: Isolation
    schema_: str = Field(SCORE_SCHEMA, alias="schema")
    scorer_version: str
    rules_digest: str
    run_id: str
    suite: SuiteRef
    scored_at: float
    weights: Weights
    inputs: Inputs
    measured: Measured | None = Field(None, description="Null in score files written before it existed.")
    security: SecurityGate
    agents: dict[str, AgentScore]
    tasks: list[TaskScore]
    trials: list[TrialRow] = Field(default_factory=list, description="assay.score/1 and documents scored in "
                                   "memory: the trial rows inline; assay.score/2 files: empty (see trials_file).")
    trials_file: TrialsFile | None = Field(None, description="assay.score/2: the side file of the trial rows.")
    recovery: RecoveryFigures = Field(default_factory=RecoveryFigures,
                                      description="Recovery under tool, process and model faults (docs/recovery.md).")
    suspect_passes: list[SuspectPass] = Field(default_factory=list, description="Passes the reward-hack screen "
                                              "flagged (docs/security.md, Screen rules); they stay passes.")
    audited_strict: dict[str, float | None] = Field(
        default_factory=dict, description="Per agent: the micro strict rate counting labelled false passes as "
                                          "failures, shown beside the raw one (agents with labels only).")
    controls: ControlsSummary | None = Field(None, description="Impossible-task controls (run with --controls): "
                                             "per agent the control pass rate, beside and never inside the "
                                             "capability score; null when the run had none.")
    deviations: dict[str, list[str]] = Field(
        default_factory=dict, description="Per task: what the run read differently from the task's source (an "
                                          "import's approximations and what could not map), from the manifest.")
    score_version: int | None = Field(None, description="N of scores/score-NNNN.json (files only).")
    performance: PerfDocument | None = Field(None, description="The run's performance figures (performance/"
                                             "performance.json beside it, docs/performance.md): beside capability, "
                                             "never part of it.")

    _source_dir: Path | None = PrivateAttr(None)
    _row_filter: Callable[[TrialRow], TrialRow | None] | None = PrivateAttr(None)

    @property
    def source_dir(self) -> Path | None:
        """The folder of the score file this was read from (where its side file is)."""
        return self._source_dir

    @property
    def row_filter(self) -> Callable[[TrialRow], TrialRow | None] | None:
        return self._row_filter

    def located(self, folder: Path | None) -> "ScoreDocument":
        """This document, read from a score file in ``folder``."""
        doc = self.model_copy()
        doc._source_dir = folder
        return doc

    def filtered(self, keep: Callable[[TrialRow], TrialRow | None]) -> "ScoreDocument":
        """This document with its rows passed through ``keep`` (a row or None) when read."""
        doc = self.model_copy()
        prev = self._row_filter
        doc._row_filter = keep if prev is None else (lambda r: None if (x := prev(r)) is None else keep(x))
        return doc
