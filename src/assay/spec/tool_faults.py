"""Tool fault specs: faults the world services inject into business tool calls.

A fault plan is a list of these on a task variant (``variants: [{id, tool_faults: [...]}]``),
so fault plans are a matrix axis like any variant: ``-n 5`` over a task with three fault-plan
variants is one reproducible run, paired with the ``base`` trials of the same repetition.
Which call is hit is counted, never drawn: the Nth call matching ``tool`` in the attempt.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class ToolFaultKind(StrEnum):
    error = "error"  # the tool answers ok=false; nothing happened
    timeout = "timeout"  # the tool answers only after delay_s, with a timeout error; nothing happened
    truncated = "truncated"  # it happened; the answer is cut to keep_chars characters
    dropped = "dropped"  # the connection drops before the tool runs; nothing happened, no answer
    slow = "slow"  # it happened; the answer arrives delay_s late
    lost_receipt = "lost_receipt"  # it happened; the connection drops before the answer


#: kinds whose side effect happens (the world executed the call)
EXECUTED_KINDS = frozenset({ToolFaultKind.truncated, ToolFaultKind.slow, ToolFaultKind.lost_receipt})


class ToolFaultSpec(BaseModel):
    """One tool fault: which call gets it, and how."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    kind: ToolFaultKind
    tool: str = Field("*", description="Tool name or glob the fault applies to, e.g. 'ledger.record_entry'.")
    on_call: int = Field(1, ge=1, description="The Nth call matching `tool` in the attempt gets the fault.")
    times: int = Field(1, ge=1, description="How many consecutive matching calls from on_call get it.")
    delay_s: float = Field(2.0, ge=0, le=600, description="Delay for slow and timeout.")
    keep_chars: int = Field(24, ge=0, description="Characters of the answer kept by truncated.")

    def hits(self, n: int) -> bool:
        """Whether the nth matching call (1-based) gets this fault."""
        return self.on_call <= n < self.on_call + self.times


class ProcessFaultKind(StrEnum):
    agent_killed = "agent_killed"  # the agent is killed once the Nth matching call has run, before its answer
    sandbox_restart = "sandbox_restart"  # the same, and the sandbox is rebuilt over the same workspace and home
    late_approval = "late_approval"  # the agent is killed while its Nth matching approval request is pending


class ProcessFaultSpec(BaseModel):
    """One process fault: when the harness kills the agent (and, for ``sandbox_restart``, the
    sandbox), after which the agent is started again in the same workspace and home within the
    same attempt; the worlds and the approval store stay open (docs/recovery.md)."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    kind: ProcessFaultKind
    tool: str = Field("*", description="Tool name or glob whose call (or approval request) triggers the fault.")
    on_call: int = Field(1, ge=1, description="The Nth matching call (or approval request) in the attempt triggers it.")
