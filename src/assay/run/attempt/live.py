"""What the phases of one attempt share: the attempt's fixed inputs (:class:`AttemptEnv`), its live
resources that teardown must release whatever happened (:class:`Live`), and :func:`timed`, which
turns a phase body into its frozen record (never raising)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, TypeVar

from assay.agents.base import AgentAdapter, AgentContext
from assay.conversations.loop import ConversationLog
from assay.harness.services import AttemptHandle, ServiceSession
from assay.harness.wiring import Wiring
from assay.records.incident import Incident
from assay.run.attempt.records import Phase, PhaseError
from assay.run.workspace import State
from assay.sandbox.base import Endpoint, Sandbox, SandboxBackend, SandboxSpec
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.load import LoadedSuite, LoadedTask
from assay.store.rundir import RunDir, is_disk_full
from assay.store.workspace_diff import Scan
from assay.trace.writer import TraceWriter
from assay.verify.remote import RemoteVerify

HOME_MOUNT = "/assay/home"
SETUP_MOUNT = "/assay/setup"
#: extra seconds the outer watchdog allows an adapter past its timeout before cancelling it
WATCHDOG_GRACE_S = 15.0
#: where an adapter keeps the native files it read back (harness scratch: neither mounted into the
#: sandbox nor part of the run directory; they reach the run directory only redacted, as artifacts)
AGENT_FILES = "agent-files"

R = TypeVar("R", bound=Phase)


@dataclass(frozen=True)
class AttemptEnv:
    """What the phases of one attempt read (never change)."""

    task: LoadedTask
    agent: AgentAdapter
    variant: str
    handle: AttemptHandle
    backend: SandboxBackend
    suite: LoadedSuite
    network: NetworkProfile
    run_limits: Limits
    track: str
    model: str | None
    run_dir: RunDir
    remote_verify: RemoteVerify | None = None  # verifier nodes of their own (a cluster that has them)

    @property
    def trace(self) -> TraceWriter:
        return self.handle.trace


@dataclass
class Live:
    """The live resources of one attempt: what teardown must release, whatever happened."""

    workspace: Path
    home: Path
    sandbox: Sandbox | None = None
    sandbox_spec: SandboxSpec | None = None  # what a sandbox_restart fault builds again
    sessions: list[ServiceSession] = field(default_factory=list)
    endpoints: list[Endpoint] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    wiring: Wiring = field(default_factory=Wiring)
    mounts: dict[str, str] = field(default_factory=dict)  # mount target -> path inside the sandbox
    context: AgentContext | None = None
    initial_scan: Scan | None = None  # the workspace after setup, for the final-state diff
    final: State | None = None  # the one walk of the final workspace (the diff's and the verifier's)
    frozen: bool = False  # the agent's isolated sandbox is gone: nothing writes the workspace any more
    conversation: ConversationLog | None = None  # a conversation task's turns and the state after each
    setup_incidents: list[Incident] = field(default_factory=list)  # what the task's setup left (killed with its sandbox)
    seeded: bool = False  # the image's WORKDIR files were copied in: the initial state is not the fixture's alone


async def timed(name: str, make: Callable[[], Awaitable[dict[str, Any]]], record: type[R]) -> R:
    """Run one phase body; its fields, its wall time and its error become the record."""
    t0 = time.monotonic()
    try:
        fields = await make()
        error = None
    except Exception as e:  # noqa: BLE001 - every failure of a phase is recorded, classified
        if is_disk_full(e):
            raise  # the run stops (resumable): a full disk is no attempt's outcome
        fields, error = {}, PhaseError.of(e)
    return record(name=name, seconds=time.monotonic() - t0, error=error, **fields)
