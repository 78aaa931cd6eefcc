"""The agent adapter interface.

An adapter prepares the workspace and the agent's per-trial config, runs the agent headless
inside the sandbox, collects its native session and maps it onto assay's trace. What an agent
says about its own success is recorded (``final_output``) and never used to decide pass/fail.
"""

from __future__ import annotations

import abc
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import AdapterError
from assay.harness.wiring import Wiring, WorldToolContract
from assay.records.results import UsageTotals
from assay.sandbox.base import Mount, Sandbox
from assay.spec.budget import Budget, Limits
from assay.spec.conversation import HistoryEvent
from assay.spec.load import LoadedTask
from assay.trace.events import EventKind
from assay.trace.writer import TraceWriter


@dataclass(frozen=True)
class AgentInfo:
    """What the runner learns about an agent before the run: bound into the manifest."""

    name: str
    kind: str
    version: str | None
    usable: bool = True
    detail: str = ""
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class AgentContext:
    """Everything an adapter needs for one attempt."""

    task: LoadedTask
    variant: str
    prompt: str
    sandbox: Sandbox
    workspace: Path  # host path of the trial workspace
    home: Path  # host path of the agent's fresh per-attempt home (config, state, sessions)
    home_inside: str  # the same directory as seen inside the sandbox
    attempt_dir: Path  # host scratch folder for native files the adapter read back; stored redacted as artifacts,
    #                    never raw in the run directory, never mounted into the sandbox
    trace: TraceWriter
    budget: Budget
    timeout_s: float
    gateway_url: str | None = None  # base URL inside the sandbox (no /v1 suffix)
    gateway_key: str | None = None
    model: str | None = None
    track: str = "controlled"
    tools: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # variant env and harness-provided env
    mounts: dict[str, str] = field(default_factory=dict)  # mount target -> path inside the sandbox
    wiring: Wiring = field(default_factory=Wiring)  # what the harness services wired in (typed)
    turn: "ConversationTurn | None" = None  # a conversation task's current turn (None: a single-turn task)
    #: the agent's run within the attempt: 2 and up after a process fault, into a home the agent has
    #: been in (so nothing is written there through a path it may have replaced with a link)
    agent_run: int = 1
    resume: "Resume | None" = None  # after a process fault: the session the restarted run continues

    @property
    def world_tools(self) -> WorldToolContract | None:
        """The world tools this attempt offers (from the wiring), or None without worlds."""
        return self.wiring.world_tools


@dataclass(frozen=True)
class Normalized:
    """One event of the agent's own session mapped onto assay's trace (recorded as source ``agent``)."""

    kind: EventKind
    data: dict[str, Any]
    ts: float | None = None


@dataclass(frozen=True)
class AgentOutcome:
    """What running the agent produced (not whether it succeeded: the verifier decides)."""

    exit_code: int | None
    timed_out: bool = False
    stdout: bytes = b""
    stderr: bytes = b""
    final_output: str | None = None
    usage: UsageTotals | None = None
    native_files: dict[str, Path] = field(default_factory=dict)  # name -> host path, stored as artifacts
    limits_exceeded: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    #: the agent's session as trace events, read once when it ran (None: the engine asks :meth:`normalize`)
    events: tuple[Normalized, ...] | None = None
    errors: tuple[str, ...] = ()  # what went wrong reading the agent's session (recorded, never an end state)

    def __post_init__(self) -> None:
        """A "final answer" read from what the agent wrote may be anything: one that is not text is
        recorded as such and dropped here, the one door every adapter's outcome passes."""
        if self.final_output is not None and not isinstance(self.final_output, str):
            kind = type(self.final_output).__name__
            object.__setattr__(self, "final_output", None)
            object.__setattr__(self, "errors", (*self.errors, f"final answer is {kind}, not text: dropped"))


@dataclass(frozen=True)
class ConversationTurn:
    """One live turn of a conversation task, as the adapter is handed it (``ctx.prompt`` is the
    user's message). Turn 1 carries the task's typed history, to be written into the agent's own
    session format before it starts; every later turn resumes the session ``session_id``."""

    number: int  # from 1
    session_id: str  # stable per attempt: the same agent session across every turn
    history: tuple[HistoryEvent, ...] = ()
    native_session: str | None = None  # the agent's own id of the session, where the agent picks it (DSH)


def step_session_id(session_id: str, number: int) -> str:
    """A session id of its own for step ``number`` of a ``fresh_sessions`` conversation (UUID-shaped,
    as the conversation's: some agents accept nothing else), derived from the conversation's."""
    h = hashlib.sha256(f"{session_id}:step:{number}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


@dataclass(frozen=True)
class Resume:
    """How a restarted agent continues the session its killed run left (docs/recovery.md): the
    agent's own id or file of that session, and the user message the continued session is given
    (``ctx.prompt``; the task's prompt is already in the session)."""

    session: str
    note: str


#: the user message a resumed session is given (recorded as the restart's ``user_message``)
RESUME_NOTE = "The run was interrupted and has been started again. Continue the task."


class SessionLost(Exception):
    """The agent did not continue the session of the previous turn (it started a fresh one, or
    its session vanished): the next turn would not see the real history. ``outcome`` is the turn
    that ran before the loss was seen (its evidence is kept)."""

    def __init__(self, message: str, outcome: "AgentOutcome | None" = None):
        super().__init__(message)
        self.outcome = outcome


class AgentAdapter(abc.ABC):
    """Base class of every agent adapter; registered by name in :mod:`assay.agents.registry`."""

    name: str = ""
    kind: str = ""
    needs_gateway: bool = False

    def __init__(self, config: dict[str, Any] | None = None):
        self.config = dict(config or {})

    @abc.abstractmethod
    def info(self) -> AgentInfo:
        """Version and usability here. Must not raise; the runner refuses unusable agents."""

    def unsupported_reason(self, task: LoadedTask) -> str | None:
        """Why this agent cannot run ``task`` under its contract (the trial is skipped), or None."""
        return None

    def unsupported_with(self, task: LoadedTask, world_tools: WorldToolContract | None) -> str | None:
        """As :meth:`unsupported_reason`, knowing the world tools an attempt would be offered
        (what the run engine asks; override it when the answer depends on them)."""
        return self.conversation_unsupported(task) or self.unsupported_reason(task)

    #: how this agent continues a conversation between turns (disclosed; None: it cannot)
    session_mechanism: str | None = None
    #: whether it can replay a typed history as its own session (not as text in a prompt)
    seeds_history: bool = False
    #: whether :meth:`run_step` starts it afresh in a workspace an earlier step left (a
    #: ``fresh_sessions`` conversation): true of an agent that keeps nothing between runs
    fresh_steps: bool = True

    def conversation_unsupported(self, task: LoadedTask) -> str | None:
        """Why this agent cannot hold ``task``'s conversation through its own session, or None.
        Never flattened into one prompt instead: the trial is skipped as unsupported."""
        conv = task.spec.conversation
        if conv is None:
            return None
        if conv.fresh_sessions:  # steps, each run afresh in one workspace (run_step)
            return None if self.fresh_steps else (
                f"unsupported: {self.name} keeps its sessions in its home, and starting it afresh there for each "
                "step of a multi-step task is not checked yet")
        if self.session_mechanism is None:
            return f"unsupported: {self.name} has no session it can continue between turns"
        if conv.history and not self.seeds_history:
            return (f"unsupported: {self.name} cannot replay a typed history as its own session "
                    f"({self.session_mechanism}); the history is never pasted into a prompt")
        return None

    async def run_step(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """Run one step of a ``fresh_sessions`` conversation: the agent started afresh on
        ``ctx.prompt`` (that step's message alone), the workspace as the last step left it."""
        return await self.run(ctx)

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """Run one turn of a conversation (``ctx.prompt`` is the user's message), continuing the
        agent's own session. Adapters that set :attr:`session_mechanism` override this; for any
        other the attempt is skipped before it starts (:meth:`unsupported_with`), so reaching this
        is the harness's error, classified, never a verdict."""
        raise AdapterError(f"{self.name} has no session to continue between turns; the attempt should have "
                           "been skipped as unsupported")

    #: how this agent continues its own session after its process was killed (disclosed; None:
    #: every restart after a process fault is fresh)
    resume_mechanism: str | None = None

    def resume_point(self, ctx: AgentContext) -> "Resume | str":
        """After a process fault (``ctx.agent_run`` > 1): the session the killed run left, to be
        continued, or why the restart is fresh. The session's files were written by the agent:
        read them without following a link and within limits, or not at all."""
        return f"{self.name} has no session it can continue after a kill"

    def limits(self, limits: Limits, task: LoadedTask | None = None) -> Limits:
        """The sandbox limits this agent runs under, given the task's (and the task, when there is
        one). An adapter may only raise what it cannot start without (e.g. address space for a Node
        runtime, or for Chromium when the task allows its own browser); the effective limits are
        recorded in every result."""
        return limits

    def mounts(self, task: LoadedTask) -> list[Mount]:
        """Extra read-only paths the agent needs inside the sandbox (e.g. its install dir)."""
        return []

    @abc.abstractmethod
    async def run(self, ctx: AgentContext) -> AgentOutcome:
        """Run the agent on one attempt, inside ``ctx.sandbox``, within ``ctx.timeout_s``."""

    def normalize(self, ctx: AgentContext, outcome: AgentOutcome) -> None:
        """Map the agent's native session onto trace events, for adapters whose outcome carries no
        ``events`` (default: nothing to map). Better: return them with the outcome, read once."""
        return None
