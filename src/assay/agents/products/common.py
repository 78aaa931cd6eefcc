"""What the four product adapters share: install lookup, mounts, the tool contract, world tools
(over the agent's own MCP client, or through the ``assay-tool`` shim), the run inside the
sandbox, and turning the native session into trace events.

A subclass says how to write its per-attempt config (:meth:`prepare`, returning argv and env)
and how to read its session back (:meth:`read_session`, a pure read of files in the agent
home). The agent's exit status and its own notion of completion go into the outcome; they
never decide pass or fail.
"""

from __future__ import annotations

import abc
import dataclasses
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import (AgentAdapter, AgentContext, AgentInfo, AgentOutcome, ConversationTurn, SessionLost,
                               step_session_id)
from assay.agents.products import install
from assay.agents.products.native_browser import BROWSER
from assay.agents.products.contract import Selection, ToolContract
from assay.agents.products.normalized import Normalized, name_world_tools
from assay.agents.products.worldtools import disclosure, settle_shim, shim_path
from assay.errors import AdapterError
from assay.harness.wiring import WorldToolContract
from assay.records.results import UsageTotals
from assay.sandbox.base import Mount
from assay.spec.load import LoadedTask
from assay.trace.events import EventKind, Source

#: PATH inside the sandbox after the agent's own bin dirs
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
#: the provider name every agent config uses for the assay gateway
PROVIDER = "assay"
KEY_ENV = "ASSAY_GATEWAY_KEY"
#: the name every agent config gives the world tool service's MCP server (tools: mcp__assay__...)
MCP_SERVER = "assay"
#: the per-attempt tool key, read by each agent's own ``${VAR}`` substitution (never written to a file)
TOOLS_KEY_ENV = "ASSAY_TOOLS_KEY"
#: how a product agent reaches world tools, disclosed in the manifest (see docs/agents.md)
WORLD_TOOLS_DISCLOSURE = {
    "shim": {
        "exposure": "shim: `assay-tool NAME --json ARGS` on the agent's own shell (PATH, login-shell PATH, key file)",
        "shell": "enabled for tasks that allow world tools, even when the task does not list shell",
        "prompt": "a fixed note listing the task's world tools and their schemas is appended (log event tool_disclosure)",
    },
    "mcp": {
        "exposure": f"mcp: the agent's own MCP client, server `{MCP_SERVER}` = streamable HTTP "
                    "{ASSAY_TOOLS_URL}/mcp/ with the per-attempt bearer key from the environment",
        "shell": "not added: world tools are real tools, the task's tool contract is exact",
        "prompt": "unchanged: the MCP tools carry their own descriptions and JSON Schemas (log event tool_disclosure)",
    },
}


def mcp_url(ctx: AgentContext) -> str:
    """The world tool service's MCP endpoint as seen inside the sandbox (with the trailing slash
    its mount answers on: ``/mcp`` answers 307, which some clients probe slowly or not at all)."""
    url = ctx.env.get("ASSAY_TOOLS_URL")
    if not url:
        raise AdapterError("world tools over MCP need the tool service (ASSAY_TOOLS_URL is not set)",
                           reason="no_tool_service")
    return url.rstrip("/") + "/mcp/"


@dataclass
class Launch:
    """How to start the agent for one attempt (everything inside-the-sandbox paths)."""

    argv: list[str]
    env: dict[str, str]
    stdin: bytes | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the effective config, recorded in the outcome


@dataclass(frozen=True)
class StepMark:
    """What :meth:`ProductAgent.read_turn` is handed for a step of a multi-step task: the sessions
    there before it, so the step's own session is the one it made."""

    before: frozenset[str] = frozenset()


class ProductAgent(AgentAdapter):
    """Base of the Pi, OpenClaw, Hermes and DSH adapters."""

    #: its home keeps its sessions: an adapter sets this once a fresh start there per step is checked
    #: end to end (tests/agents/products/test_fresh_steps_e2e.py)
    fresh_steps = False

    needs_gateway = True
    contract: ToolContract  # what its native tool switches mean (agents/products/contract.py)
    install_spec: install.InstallSpec  # how ``assay agents install`` installs it
    #: how world tools reach this agent by default: "mcp" where its MCP client works in the
    #: sandbox, else "shim"; the agent config's ``world_exposure`` overrides it
    world_exposure = "shim"
    #: the install part the MCP client needs (:attr:`install.InstallSpec.parts`), if any
    mcp_part: str | None = None
    #: the install part its own browser tool needs (an npm tool: :attr:`install.InstallSpec.npm_tools`)
    browser_part: str | None = None

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(config)
        self.version = self.config.get("version")
        self.requested_exposure = str(self.config.get("world_exposure") or self.world_exposure)
        if self.requested_exposure not in ("mcp", "shim"):
            raise AdapterError(f"{self.name}: world_exposure must be mcp or shim, not {self.requested_exposure!r}")
        if self.requested_exposure == "mcp" and type(self).mcp_config is ProductAgent.mcp_config:
            raise AdapterError(f"{self.name}: has no MCP wiring; use world_exposure: shim")

    @property
    def exposure(self) -> str:
        """``mcp`` when asked for and the installed agent has its MCP client, else ``shim``."""
        if self.requested_exposure == "mcp" and self.mcp_part is not None:
            try:
                inst = self.installation()
            except Exception:  # noqa: BLE001 - no install: nothing runs anyway
                inst = None
            if inst is not None and not inst.has(self.mcp_part):
                return "shim"
        return self.requested_exposure

    # ------------------------------------------------------------------ install and detect
    def installation(self) -> install.Installation | None:
        return install.find(self.name, self.version)

    def info(self) -> AgentInfo:
        try:
            inst = self.installation()
        except Exception as e:  # noqa: BLE001 - info() must never raise
            return AgentInfo(self.name, self.kind, None, usable=False, detail=f"{type(e).__name__}: {e}")
        spec = install.spec_for(self.name, self.version)
        if inst is None:
            return AgentInfo(self.name, self.kind, None, usable=False,
                             detail=f"not installed (fix: assay agents install {self.name})")
        cfg = {"package": spec.package, "install_dir": str(inst.root), "runtime": inst.runtime,
               "tracks": {"controlled": self.describe("controlled"), "native": self.describe("native")},
               "world_tools": WORLD_TOOLS_DISCLOSURE[self.exposure]}
        if self.exposure != self.requested_exposure:
            cfg["world_tools"] = {**cfg["world_tools"], "why": f"this install lacks its MCP client "
                                  f"(fix: assay agents install {self.name})"}
        return AgentInfo(self.name, self.kind, inst.version, usable=True, detail=f"{spec.package} ({inst.runtime})",
                         config=cfg)

    @abc.abstractmethod
    def describe(self, track: str) -> dict[str, Any]:
        """The effective configuration of a track, disclosed in the manifest."""

    # ------------------------------------------------------------------ contract and mounts
    def tool_plan(self, task: LoadedTask, allowed: list[str] | None = None,
                  world_tools: WorldToolContract | None = None) -> Selection:
        """The native switches for ``task`` and what they really expose (world tools over MCP or the shim)."""
        tools = list(task.spec.tools) if allowed is None else allowed
        plan = self.contract.plan(tools, world_tools.names if world_tools else [], self.exposure)
        if plan.why is None and BROWSER in plan.neutral and self.browser_part is not None:
            inst = self.installation()
            if inst is not None and not inst.has(self.browser_part):
                return dataclasses.replace(plan, why=f"unsupported: this install of {self.name} lacks its browser part "
                                                     f"(fix: assay agents install {self.name})")
        return plan

    def uses_mcp(self, ctx: AgentContext) -> bool:
        """Whether this attempt wires the world tool service in as an MCP server."""
        return self.exposure == "mcp" and ctx.world_tools is not None

    @abc.abstractmethod
    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        """The agent's own config entry for the world MCP server at ``url``."""

    def unsupported_reason(self, task: LoadedTask) -> str | None:
        return self.unsupported_with(task, None)

    def unsupported_with(self, task: LoadedTask, world_tools: WorldToolContract | None) -> str | None:
        return self.conversation_unsupported(task) or self.tool_plan(task, world_tools=world_tools).why

    def native_tools(self, ctx: AgentContext) -> list[str]:
        plan = self.tool_plan(ctx.task, ctx.tools, ctx.world_tools)
        if plan.why is not None:
            raise AdapterError(f"{self.name}: {plan.why}", reason="unsupported")
        return list(plan.switches)

    def mounts(self, task: LoadedTask) -> list[Mount]:
        inst = self.installation()
        if inst is None:
            return []
        # same path inside as outside: venv shebangs and npm links hold absolute paths
        return [Mount(p, str(p)) for p in inst.read_only_paths()]

    def require(self) -> install.Installation:
        inst = self.installation()
        if inst is None:
            raise AdapterError(f"{self.name} is not installed (fix: assay agents install {self.name})",
                               reason="agent_not_installed")
        return inst

    # ------------------------------------------------------------------ run
    @abc.abstractmethod
    def prepare(self, ctx: AgentContext, inst: install.Installation) -> Launch:
        """Write the per-attempt config under ``ctx.home``; return how to start the agent."""

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        """The agent's own final answer and completion facts, from its stdout (default: the text)."""
        text = stdout.decode(errors="replace").strip()
        return (text[-4000:] if text else None), {}

    async def run(self, ctx: AgentContext, since: Any = None) -> AgentOutcome:
        """Run the agent once; in a conversation, ``since`` is :meth:`turn_mark` taken before the
        turn, so :meth:`read_turn` reads only what this turn added to the session."""
        if ctx.gateway_url is None or ctx.model is None:
            raise AdapterError(f"{self.name} needs the model gateway (pass --model)", reason="no_gateway")
        inst = self.require()
        ctx = self.disclose_world_tools(ctx)
        if (ctx.turn is not None and ctx.turn.number > 1) or ctx.agent_run > 1:
            # the agent has been in its home (an earlier turn, or a run killed by a process fault):
            # its config stays as the first run wrote it, and nothing is written there again (a
            # planted link would redirect the write); prepare() writes aside
            with tempfile.TemporaryDirectory(prefix="assay-turn-") as aside:
                launch = self.prepare(dataclasses.replace(ctx, home=Path(aside)), inst)
        else:
            launch = self.prepare(ctx, inst)
            if not self.uses_mcp(ctx):
                settle_shim(ctx.home, ctx.env)
        env = {**ctx.env, **launch.env}
        env["PATH"] = shim_path(ctx.env, env.get("PATH", SYSTEM_PATH))
        launch.config["tools"] = self.tool_plan(ctx.task, ctx.tools, ctx.world_tools).record()
        if ctx.track != "controlled":
            launch.config["tools"]["native_switches"] = "agent defaults (native track)"
        res = await ctx.sandbox.exec(launch.argv, env=env, cwd=ctx.sandbox.workspace_path, timeout_s=ctx.timeout_s,
                                     stdin=launch.stdin)
        final, facts = completion_of(self, ctx, res.stdout)
        if b"Fatal process out of memory" in res.stderr or b"Failed to reserve virtual memory" in res.stderr:
            facts["hint"] = ("the JavaScript runtime could not reserve address space: RLIMIT_AS (limits.memory_mb) "
                             f"is too low for {self.name}; OpenClaw needs 16384 or more")
        native = {name: p for name, p in self.native_files(ctx).items() if p.is_file()}
        extra = {"agent": self.name, "version": inst.version, "track": ctx.track, "config": launch.config, **facts}
        errors: tuple[str, ...] = ()
        try:  # the session is read once: its usage and its events come from the same items
            read = self.read_session(ctx, res.stdout) if ctx.turn is None else self.read_turn(ctx, res.stdout, since)
            items = name_world_tools(read, ctx.world_tools)
        except Exception as e:  # noqa: BLE001 - a missing or torn session loses the trace, not the verdict
            items, errors = [], (f"{type(e).__name__}: {e}",)
        if final is not None:  # the engine records the agent's final answer itself
            items = [i for i in items if i.kind != EventKind.final_output]
        # the agent's own notion of completion and the effective config: recorded, never judged
        log = Normalized(EventKind.log, {"phase": "agent_run", "exit_code": res.exit_code, "timed_out": res.timed_out,
                                         **extra})
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=res.stdout, stderr=res.stderr,
                            final_output=final, native_files=native, limits_exceeded=res.limits_exceeded,
                            usage=usage_of(items), extra=extra, events=(log, *items), errors=errors)

    # ------------------------------------------------------------------ conversations
    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """Turn 1 writes the typed history into the agent's own session format (if it has one);
        every turn runs the agent continuing the session ``turn.session_id``, which must still be
        there, as the agent's own, after the turn (else :class:`SessionLost`)."""
        if turn.number == 1 and turn.history:
            await self.seed_session(ctx, turn)
        elif turn.number > 1:
            native = self.check_session(ctx, turn, when="before")
            turn = dataclasses.replace(turn, native_session=native)
            ctx = dataclasses.replace(ctx, turn=turn)
        outcome = await self.run(ctx, self.turn_mark(ctx, turn))
        if not outcome.timed_out:
            try:
                self.check_session(ctx, turn, when="after")
            except SessionLost as e:
                raise SessionLost(str(e), outcome) from None
        return outcome

    async def run_step(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """A step of a multi-step task: a new session, named by an id of its own where the agent
        takes one (never the session an earlier step made), on that step's message alone; a later
        step's config is written aside, as for a turn (the home is the agent's by then)."""
        own = dataclasses.replace(turn, session_id=step_session_id(turn.session_id, turn.number), history=(),
                                  native_session=None)
        return await self.run(dataclasses.replace(ctx, turn=own), StepMark(self.sessions_before(ctx)))

    def sessions_before(self, ctx: AgentContext) -> frozenset[str]:
        """The sessions the agent's store holds before a step (an adapter whose store keeps every
        step's session reads only the new one after it; default: none known)."""
        return frozenset()

    async def seed_session(self, ctx: AgentContext, turn: ConversationTurn) -> None:
        """Write the typed history as the agent's own session (only adapters with ``seeds_history``)."""
        raise AdapterError(f"{self.name} cannot replay a typed history", reason="unsupported")

    def turn_mark(self, ctx: AgentContext, turn: ConversationTurn) -> Any:
        """Where the session stands before a turn (None: the adapter reads its turn from stdout)."""
        return None

    def read_turn(self, ctx: AgentContext, stdout: bytes, since: Any) -> list[Normalized]:
        """One conversation turn's events: what the session gained since the mark ``since``
        (default: :meth:`read_session`, for adapters that read a turn from their stdout)."""
        return self.read_session(ctx, stdout)

    def check_session(self, ctx: AgentContext, turn: ConversationTurn, *, when: str) -> str:
        """The agent's id of the conversation's session, found in the agent home (read without
        following links); :class:`SessionLost` when it is not there, or not the only one."""
        raise SessionLost(f"{self.name} has no session to continue")

    def disclose_world_tools(self, ctx: AgentContext) -> AgentContext:
        """Record in the trace how the world tools reach the agent. Over MCP the tools describe
        themselves and the prompt is unchanged; through the shim a note is appended to the prompt
        (see :mod:`.worldtools`) and its exact text recorded. No worlds: nothing happens."""
        tools = ctx.world_tools.tool_list() if ctx.world_tools else []
        if not tools:
            return ctx
        plan = self.tool_plan(ctx.task, ctx.tools, ctx.world_tools)
        if self.exposure == "mcp":
            ctx.trace.emit(Source.harness, EventKind.log, {
                "phase": "tool_disclosure", "agent": self.name, "exposure": "mcp", "appended_to_prompt": "",
                "shell_note": False, "mcp_server": MCP_SERVER, "world_tools": [t["name"] for t in tools],
                "tools": plan.record()})
            return ctx
        shell_note = plan.shell_for_shim and ctx.track == "controlled"  # native: the shell is a default tool
        note = disclosure(tools, shell_note)
        ctx.trace.emit(Source.harness, EventKind.log, {
            "phase": "tool_disclosure", "agent": self.name, "exposure": "shim", "appended_to_prompt": note,
            "shell_note": shell_note,
            "world_tools": [t["name"] for t in tools], "tools": plan.record()})
        return dataclasses.replace(ctx, prompt=ctx.prompt.rstrip("\n") + "\n\n" + note)

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        """Native session files to keep as artifacts (text files only)."""
        return {}

    # ------------------------------------------------------------------ normalize
    @abc.abstractmethod
    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        """The native session under ``ctx.home`` as trace events (pure read)."""


def usage_of(items: list[Normalized]) -> UsageTotals | None:
    """Usage totals from the native session (used only when the gateway counted nothing)."""
    calls = [i for i in items if i.kind == EventKind.model_response]
    if not calls:
        return None
    return UsageTotals(
        model_calls=len(calls),
        input_tokens=sum(c.data["usage"]["input_tokens"] for c in calls),
        output_tokens=sum(c.data["usage"]["output_tokens"] for c in calls),
        cached_tokens=sum(c.data["usage"]["cached_tokens"] for c in calls),
        cost_usd=sum(c.data.get("cost_usd", 0.0) for c in calls),
        tool_calls=sum(1 for i in items if i.kind == EventKind.tool_call))


def gateway_v1(ctx: AgentContext) -> str:
    assert ctx.gateway_url is not None
    return ctx.gateway_url.rstrip("/") + "/v1"


def node_env(inst: install.Installation, home: str) -> dict[str, str]:
    """Environment every Node agent gets: its own Node first on PATH, a fresh HOME, no update checks."""
    return {"PATH": f"{inst.node_bin_dir}:{SYSTEM_PATH}", "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_CACHE_HOME": f"{home}/.cache", "XDG_DATA_HOME": f"{home}/.local/share",
            "NO_UPDATE_NOTIFIER": "1", "npm_config_update_notifier": "false", "DO_NOT_TRACK": "1",
            "NODE_OPTIONS": "--disable-wasm-trap-handler", "TMPDIR": "/tmp"}


def python_env(inst: install.Installation, home: str) -> dict[str, str]:
    return {"PATH": f"{inst.root / 'venv' / 'bin'}:{SYSTEM_PATH}", "HOME": home, "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_CACHE_HOME": f"{home}/.cache", "XDG_DATA_HOME": f"{home}/.local/share", "DO_NOT_TRACK": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "TMPDIR": "/tmp"}


def completion_of(adapter: ProductAgent, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
    """The adapter's :meth:`~ProductAgent.completion`, over output the agent controls (any process
    in the sandbox can write to the agent's stdout): a reader that fails on it is recorded as such
    and never becomes the harness's crash."""
    try:
        return adapter.completion(ctx, stdout)  # a final answer that is not text: AgentOutcome drops it
    except Exception as e:  # noqa: BLE001 - the agent's output is unreadable: evidence, not an infra error
        return None, {"completion": f"unreadable: {type(e).__name__}"}

