"""Harness services: the endpoints the harness serves to a sandboxed agent (law 6).

The model gateway, the business worlds and the approval service are each a
:class:`HarnessService`: started once per run, opened once per attempt. An attempt's session
tells the trial engine which endpoints to bridge into the sandbox, which environment and
secrets to hand the agent, and at the end what was spent and what happened. The trial engine
knows nothing else about them.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.harness.budget import BudgetMeter
from assay.harness.wiring import Wiring, WorldToolContract
from assay.records.incident import Incident
from assay.records.results import UsageTotals
from assay.records.verifier_inputs import VerifierInputs
from assay.sandbox.base import Endpoint
from assay.spec.budget import Budget
from assay.spec.load import LoadedTask
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter


@dataclass
class AttemptHandle:
    """Identity and evidence sinks of the attempt a session belongs to."""

    run_id: str
    trial_id: str
    attempt: int
    task: LoadedTask
    variant: str
    agent: str
    trace: TraceWriter
    redactor: Redactor
    budget: Budget
    attempt_dir: Path  # host path; a service may keep files here (stored as artifacts)
    scratch: Path  # host scratch folder for this attempt (deleted after it)
    meter: BudgetMeter | None = None  # shared by every service that spends the budget (made from it if None)
    world_tools: WorldToolContract | None = None  # the world tools this attempt offers (known before it starts)

    def __post_init__(self) -> None:
        if self.meter is None:
            self.meter = BudgetMeter(self.budget)

    @property
    def budget_meter(self) -> BudgetMeter:
        assert self.meter is not None
        return self.meter


@dataclass
class SessionReport:
    """What a service reports when an attempt's session closes."""

    usage: UsageTotals | None = None
    incidents: list[Incident] = field(default_factory=list)
    budget_exceeded: list[str] = field(default_factory=list)
    verifier_extra: VerifierInputs = field(default_factory=VerifierInputs)  # e.g. world state and diff for predicates
    files: dict[str, Path] = field(default_factory=dict)  # name -> host path, stored as artifacts
    extra: dict[str, Any] = field(default_factory=dict)


class ServiceSession(abc.ABC):
    """One attempt's view of a service."""

    endpoints: list[Endpoint]
    env: dict[str, str]  # handed to the agent; may contain "{endpoint:NAME}" to be filled by the sandbox URL

    def wiring(self) -> Wiring:
        """What this session wires into the agent (gateway, world tools): typed, never by string key."""
        return Wiring()

    async def checkpoint(self, label: str) -> VerifierInputs:
        """The state a verifier reads, mid-attempt (a conversation task, after one of its turns):
        :attr:`SessionReport.verifier_extra` as it stands now (default: nothing)."""
        return VerifierInputs()

    @abc.abstractmethod
    async def close(self) -> SessionReport:
        """End the session (after the agent's processes are gone); must not raise."""


class HarnessService(abc.ABC):
    name: str = ""

    async def start(self) -> None:
        """Start serving (once per run)."""

    async def stop(self) -> None:
        """Stop serving (once per run)."""

    def manifest_record(self) -> dict[str, Any]:
        """Facts bound into the run manifest (backend, settings, prices, faults...)."""
        return {}

    def tool_contract(self, task: LoadedTask) -> WorldToolContract | None:
        """The world tools an attempt of ``task`` will be offered, known before it starts (so an
        agent can say whether it supports the task); None when this service offers none."""
        return None

    @abc.abstractmethod
    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        """Open a session for one attempt, or None if this attempt does not use the service."""
