"""Fault injection specs: declared in the run manifest or a task, applied deterministically
by the gateway (model faults) or the world services (tool faults)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class FaultKind(StrEnum):
    timeout = "timeout"  # the call hangs past the client's patience, then is dropped
    rate_limit = "rate_limit"  # HTTP 429 with Retry-After
    server_error = "server_error"  # HTTP 5xx
    truncated = "truncated"  # body cut off mid-way
    malformed = "malformed"  # body is not valid JSON / SSE
    latency = "latency"  # answer correctly, but late


class FaultSpec(BaseModel):
    """One fault: which call (1-based, counted per trial) gets it, and how."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    kind: FaultKind
    on_call: int = Field(1, ge=1, description="The Nth model call of the attempt receives the fault.")
    times: int = Field(1, ge=1, description="How many consecutive calls from on_call get it.")
    # bounded so that a fault is what its kind says: a status outside 5xx broke the HTTP answer or
    # answered an error as a success, and the agent was charged with the failure
    status: int | None = Field(None, ge=500, le=599, description="HTTP status for server_error, 500-599 "
                                                                  "(default 503).")
    retry_after_s: float | None = Field(None, ge=0, le=600,
                                        description="Retry-After for rate_limit, 0-600 s (default 1).")
    delay_s: float | None = Field(None, ge=0, le=600,
                                  description="Added latency, or hang time for timeout, 0-600 s (as tool faults).")
