"""Immutable result records: one per attempt, written once, read by everything downstream."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.records.incident import Incident
from assay.spec.budget import BudgetName

RESULT_SCHEMA_VERSION = 1


class EndState(StrEnum):
    """How an attempt ended. Only a verifier decides pass or fail."""

    passed = "pass"
    failed = "fail"
    timeout = "timeout"
    infra_error = "infra_error"
    skipped = "skipped"


#: an end state's value by member, for a reader of 10^6 results (``.value`` is a Python-level property)
END_STATE_VALUE = {m: m.value for m in EndState}


class Trust(StrEnum):
    """How far a predicate's verdict can be forged by the code under test (docs/security.md)."""

    state = "state"  # read back by the harness from a snapshot; no agent code ran
    outside_oracle = "outside_oracle"  # agent code ran in a sandbox; outputs compared outside it
    in_process = "in_process"  # hardened, but agent code shares the process that judges it
    model_judged = "model_judged"  # a calibrated model's opinion of the agent's output (which may argue with it)
    recorded = "recorded"  # the harness's own record of what crossed its endpoints (gateway, worlds, approvals)
    agent_reported = "agent_reported"  # only the agent's own log or output says so: never alone a pass


#: how a result's ``errors`` begin where the teardown lost evidence the reward-hack screen reads: the
#: workspace's final state (its diff), or the agent's events (its calls); such a pass is flagged
EVIDENCE_NOT_KEPT = "evidence not kept: "
EVENTS_NOT_KEPT = "agent's events not kept: "

#: who recorded an input a predicate decided on (PredicateResult.recorded_by)
RECORDERS = ("harness", "snapshot", "agent")


class PredicateResult(BaseModel):
    """One predicate's verdict and the evidence it read."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str
    required: bool
    weight: float
    passed: bool
    evidence: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    duration_s: float = 0.0
    trust: Trust | None = Field(None, description="How the verdict was reached (None in results older than trust levels).")
    recorded_by: list[str] = Field(default_factory=list, description="Who recorded the inputs the verdict was "
                                   "decided on: harness, snapshot, agent (empty in older results).")
    turn: int | None = Field(None, ge=1, description="Conversation tasks: the turn after which this was checked "
                                                     "(None: the final state).")


class UsageTotals(BaseModel):
    """What an attempt spent, from the gateway's accounting or the adapter's session."""

    model_config = ConfigDict(frozen=True)

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


class Timings(BaseModel):
    model_config = ConfigDict(frozen=True)

    started_at: float
    ended_at: float
    setup_s: float = 0.0
    agent_s: float = 0.0
    verify_s: float = 0.0
    agent_cpu_s: float | None = Field(None, description="CPU seconds of all the agent sandbox's processes "
                                      "(None: the backend does not measure them).")
    verify_cpu_s: float | None = Field(None, description="CPU seconds of all the verifier sandbox's processes "
                                       "(None: no verifier sandbox, or not measured).")
    host_load_per_cpu: float | None = Field(None, description="The host's 1-minute load average per CPU, the "
                                            "higher of the attempt's start and end (None: not measured).")
    host_cpu_pressure: float | None = Field(None, description="Share of the attempt's wall time in which some task "
                                            "on the host waited for a CPU (PSI; None: the kernel does not say).")

    @property
    def wall_s(self) -> float:
        return self.ended_at - self.started_at


class AttemptResult(BaseModel):
    """The immutable record of one attempt of one trial."""

    model_config = ConfigDict(frozen=True)

    schema_version: int = RESULT_SCHEMA_VERSION
    run_id: str
    trial_id: str
    task_id: str
    category: str
    variant: str
    agent: str
    repetition: int
    attempt: int
    end_state: EndState
    reason: str | None = Field(None, description="Why: skip reason, infra error class, limit hit, ...")
    retryable: bool = Field(False, description="True when a classified infrastructure error allows a retry.")
    retry_reason: str | None = Field(None, description="Why this attempt exists (the previous attempt's reason).")
    partial: bool = Field(False, description="The runner died during this attempt; found and closed on resume.")
    predicates_held: bool = Field(False, description="Every required predicate held.")
    diagnostic_score: float = Field(0.0, ge=0, le=100)
    predicates: list[PredicateResult] = Field(default_factory=list)
    timings: Timings
    usage: UsageTotals = Field(default_factory=UsageTotals)
    agent_exit_code: int | None = None
    agent_claim: str | None = Field(None, description="What the agent said it did. Recorded, never used to score.")
    incidents: list[Incident] = Field(default_factory=list)
    limits_exceeded: list[str] = Field(default_factory=list)
    budget_exceeded: BudgetName | None = Field(
        None, description="The budget that ended the attempt: the first one the harness refused past (or the one "
                          "the agent stopped itself at, or the wall time); None when no budget did.")
    errors: list[str] = Field(default_factory=list)
    artifacts: dict[str, str] = Field(default_factory=dict, description="name -> sha256 of stored artifact")
    sandbox: dict[str, Any] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict, description="Adapter/world specific facts.")
    host_contended: bool = Field(False, description="A timeout taken while the host was overloaded (CPU pressure "
                                 "or load above assay.run.hostload's thresholds): the host's as much as the agent's.")

    @property
    def strict_pass(self) -> bool:
        """Pass means the verifier passed it: never the agent's own claim."""
        return self.end_state is EndState.passed
