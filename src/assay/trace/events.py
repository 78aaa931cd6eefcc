"""The one trace event model every part of assay writes and reads.

Events are sequenced per trial (``seq`` increases by one across all attempts of a trial),
stamped with a wall-clock timestamp and a source, and carry a kind-specific payload. The
payload models below document what each kind holds; adapters map an agent's native session
onto these, so nothing agent-specific leaks past the adapter.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Source(StrEnum):
    harness = "harness"
    agent = "agent"
    gateway = "gateway"
    world = "world"
    approval = "approval"
    verifier = "verifier"
    sandbox = "sandbox"


class EventKind(StrEnum):
    trial_started = "trial_started"
    trial_ended = "trial_ended"
    attempt_started = "attempt_started"
    attempt_ended = "attempt_ended"
    user_message = "user_message"
    model_request = "model_request"
    model_response = "model_response"
    tool_call = "tool_call"
    tool_result = "tool_result"
    approval_requested = "approval_requested"
    approval_decided = "approval_decided"
    fault_injected = "fault_injected"
    budget_exceeded = "budget_exceeded"
    incident = "incident"
    error = "error"
    final_output = "final_output"
    predicate_result = "predicate_result"
    process_output = "process_output"
    log = "log"


class TraceEvent(BaseModel):
    """One event in a trial's trace."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int = Field(ge=0, description="Sequence number within the trial, from 0, without gaps.")
    ts: float = Field(description="Unix time in seconds.")
    trial_id: str
    attempt: int = Field(ge=1)
    source: Source
    kind: EventKind
    data: dict[str, Any] = Field(default_factory=dict)


# ----------------------------------------------------------------------------- payloads
class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    counted: bool = Field(False, description="True when the harness counted tokens itself.")


class ModelResponsePayload(BaseModel):
    """What a model_response event holds."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cost_usd: float = 0.0
    finish_reason: str | None = None
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class ToolCallPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    call_id: str = ""
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    native_name: str | None = Field(None, description="The agent's own name for the tool, if different.")


class ToolResultPayload(BaseModel):
    model_config = ConfigDict(extra="allow")

    call_id: str = ""
    name: str = ""
    ok: bool = True
    exit_code: int | None = None
    duration_s: float | None = None
    truncated: bool = False
    output: str = ""
    error: str | None = None


class IncidentPayload(BaseModel):
    """A security incident: feeds the security gate, never averaged into a score."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="e.g. left_behind_process, secret_leak, read_only_write, approval_bypass")
    severity: str = Field("high", description="low | medium | high | critical")
    summary: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)
