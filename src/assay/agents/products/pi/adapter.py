"""Pi (``@earendil-works/pi-coding-agent``), run headless as ``pi -p --mode json``.

Per attempt: ``$HOME/pi-agent/models.json`` declares the assay gateway as an
``openai-completions`` provider whose key is read from the environment (Pi 1.x reads
``"$NAME"`` as a variable, a bare name literally); sessions go to ``$HOME/sessions``. Context
files, skills, extensions, prompt templates and MCP are off in the controlled track, and
``--tools`` restricts the built-in tools to the task's contract.

World tools come over MCP: ``$HOME/pi-agent/mcp.json`` (the user-level file, under
``PI_CODING_AGENT_DIR``) declares the tool service's streamable HTTP endpoint as server
``assay`` with ``direct`` exposure, so the model sees ``mcp__assay__<world>_<tool>`` as ordinary
tools (no codemode, no tool search); the bearer key is read from the environment by Pi's own
``${VAR}`` substitution. ``--no-mcp`` is then left off and ``--tools`` gains ``mcp__assay__*``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.agents.base import RESUME_NOTE, AgentContext, ConversationTurn, Resume, SessionLost
from assay.agents.history import chat_messages
from assay.agents.live import LiveInput
from assay.agents.products.common import (KEY_ENV, MCP_SERVER, PROVIDER, SYSTEM_PATH, TOOLS_KEY_ENV, Launch,
                                          ProductAgent, gateway_v1, mcp_url, node_env)
from assay.agents.products.contract import ToolContract, single
from assay.agents.products.install import InstallSpec, Installation
from assay.agents.products.normalized import Normalized, read_jsonl
from assay.agents.products.pi.conversation import resumable, seeded_session, session_files_by_id
from assay.agents.products.pi.rpc import RPC_FLAGS, PiRpc
from assay.agents.products.pi.session_format import PI_TOOLS, normalize_messages, session_messages, stdout_messages
from assay.agents.products.seeding import tool_namer
from assay.agents.products.worldtools import shim_path
from assay.untrusted import files as safe_files

CONTROLLED_FLAGS = ["--no-context-files", "--no-skills", "--no-extensions", "--no-prompt-templates", "--no-mcp"]

#: where this adapter reads its native session (a link or special file there is a planted trap)
SESSION_GLOBS = ["sessions/*.jsonl"]
#: the timestamp part of a seeded session's file name (Pi names files ``<timestamp>_<id>.jsonl``)
SEED_PREFIX = "2026-01-01T00-00-00-000Z"


def models_json(base_url: str, model: str) -> dict[str, Any]:
    return {"providers": {PROVIDER: {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "$" + KEY_ENV,
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": model, "contextWindow": 128000, "maxTokens": 4096,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}


def mcp_json(url: str) -> dict[str, Any]:
    """Pi's ``mcp.json``: the world tool service as one directly exposed HTTP server."""
    return {"autoEnableCodemode": False, "mcpServers": {MCP_SERVER: {
        "url": url, "headers": {"Authorization": "Bearer ${" + TOOLS_KEY_ENV + "}"}, "exposure": "direct",
        "timeout": 3600, "description": "The business systems of this task (assay world tools)"}}}


#: the ``--tools`` entry keeping exactly the world server's tools (an ``mcp__`` entry filters MCP tools)
MCP_TOOLS = f"mcp__{MCP_SERVER}__*"


class PiAgent(ProductAgent):
    name = "pi"
    kind = "pi"
    contract = ToolContract("pi", single({"bash": "shell", "read": "read", "write": "write", "edit": "edit",
                                          "ls": "list"}), own_browser="Pi has no browser tool")
    install_spec = InstallSpec("pi", "npm", "@earendil-works/pi-coding-agent", "1.6.0", "node_modules/.bin/pi",
                               node="24")
    world_exposure = "mcp"
    session_mechanism = "Pi's own JSONL session (v3) in $HOME/sessions, continued with --session-id"
    seeds_history = True
    resume_mechanism = ("Pi's own JSONL session in $HOME/sessions, continued with --session-id after a kill "
                        "(Pi itself answers a call left without its result with an error result)")
    fresh_steps = True  # a step afresh is a session id of its own (ProductAgent.run_step)

    def resume_point(self, ctx: AgentContext) -> Resume | str:
        sid, why = resumable(ctx.home, SESSION_GLOBS[0])
        return Resume(session=sid, note=RESUME_NOTE) if sid is not None else why

    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        return mcp_json(url)

    def describe(self, track: str) -> dict[str, Any]:
        flags = ["-p", "--mode", "json", "--no-approve", "--offline"]
        if track == "controlled":
            return {"flags": [*flags, *CONTROLLED_FLAGS, "--tools", "<task tools>"], "api": "openai-completions",
                    "tools": "the task's tools mapped onto bash/read/write/edit/ls"}
        return {"flags": flags, "api": "openai-completions", "tools": "Pi defaults (read, bash, edit, write)"}

    def prepare(self, ctx: AgentContext, inst: Installation, *, rpc: bool = False) -> Launch:
        """``rpc``: Pi's RPC mode (commands on stdin, no prompt on the command line), else ``-p --mode json``."""
        home = ctx.home_inside
        agent_dir = ctx.home / "pi-agent"
        agent_dir.mkdir(parents=True, exist_ok=True)
        (ctx.home / "sessions").mkdir(exist_ok=True)
        assert ctx.model is not None
        (agent_dir / "models.json").write_text(json.dumps(models_json(gateway_v1(ctx), ctx.model), indent=2))
        mode = RPC_FLAGS if rpc else ["-p", "--mode", "json"]
        argv = [str(inst.bin), *mode, "--no-approve", "--offline",
                "--session-dir", f"{home}/sessions", "--model", f"{PROVIDER}/{ctx.model}"]
        shown_cfg: dict[str, Any] = {}
        mcp = self.uses_mcp(ctx)
        if mcp:
            (agent_dir / "mcp.json").write_text(json.dumps(self.mcp_config(ctx, mcp_url(ctx)), indent=2))
            shown_cfg["mcp.json"] = mcp_json("{ASSAY_TOOLS_URL}/mcp/")
        if ctx.track == "controlled":
            # --no-extensions also drops the built-in MCP extension: load it back explicitly
            flags = [f for f in CONTROLLED_FLAGS if not (mcp and f == "--no-mcp")] + (["-e", "builtin:mcp"] if mcp else [])
            tools = self.native_tools(ctx) + ([MCP_TOOLS] if mcp else [])
            argv += [*flags, "--tools", ",".join(tools)]
        if ctx.turn is not None:  # a conversation: every turn continues the one session
            argv += ["--session-id", ctx.turn.session_id]
        elif ctx.resume is not None:  # started again after a kill: the killed run's session continues
            argv += ["--session-id", ctx.resume.session]
        if not rpc:
            argv += ["--", ctx.prompt]
        env = {**node_env(inst, home), "PI_CODING_AGENT_DIR": f"{home}/pi-agent", "PI_OFFLINE": "1",
               "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1", KEY_ENV: ctx.gateway_key or ""}
        shown = [a if a != ctx.prompt else "<prompt>" for a in argv]
        return Launch(argv, env, config={"argv": shown, "models.json": models_json("<gateway>/v1", ctx.model),
                                         **shown_cfg})

    def live_input(self, ctx: AgentContext) -> LiveInput:
        """Pi's RPC mode over the same configuration, continuing the turn's session: messages
        while it works go in as prompts queued to follow (agents/products/pi/rpc.py)."""
        inst = self.require()
        launch = self.prepare(ctx, inst, rpc=True)
        env = {**ctx.env, **launch.env}
        env["PATH"] = shim_path(ctx.env, env.get("PATH", SYSTEM_PATH))
        return LiveInput(launch.argv, env, PiRpc(), launch.config)

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        events = read_jsonl(stdout.decode(errors="replace"))
        settled = next((e for e in reversed(events) if e.get("type") == "agent_settled"), None)
        msgs = [m for m, _ in stdout_messages(events) if m.get("role") == "assistant"]
        last = msgs[-1] if msgs else {}
        text = "".join(b.get("text", "") for b in last.get("content") or [] if isinstance(b, dict)
                       and b.get("type") == "text")
        facts = {"stop_reason": last.get("stopReason"), "aborted": settled.get("aborted") if settled else None}
        if ctx.resume is not None:  # did Pi continue the killed run's session, or start another one?
            kept = session_files_by_id(ctx.home, SESSION_GLOBS[0])  # one session, in one file (a copy is not kept)
            facts["resumed_session_kept"] = list(kept) == [ctx.resume.session] and len(kept[ctx.resume.session]) == 1
        return (text or None), safe_files.with_traps(ctx.home, SESSION_GLOBS, facts)

    def session_files(self, ctx: AgentContext) -> list[Path]:
        """Session logs in the agent home (regular files only, reached without following a link)."""
        return [ctx.home / rel for rel in safe_files.glob(ctx.home, "sessions/*.jsonl")]

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        out: dict[str, Path] = {}
        for p in self.session_files(ctx):
            try:
                out[f"pi.{p.name}"] = safe_files.copy_out(ctx.home, p.relative_to(ctx.home).as_posix(),
                                                          ctx.attempt_dir, f"pi.{p.name}")
            except OSError:
                continue
        return out

    async def seed_session(self, ctx: AgentContext, turn: ConversationTurn) -> None:
        """The history as Pi's own session file, which ``--session-id`` then continues."""
        name = tool_namer(PI_TOOLS.to_neutral, f"mcp__{MCP_SERVER}__" if self.uses_mcp(ctx) else None)
        text = seeded_session(turn.session_id, ctx.sandbox.workspace_path, chat_messages(turn.history, name),
                              model=ctx.model or "", provider=PROVIDER)
        safe_files.write_new(ctx.home, f"sessions/{SEED_PREFIX}_{turn.session_id}.jsonl", text.encode())

    def check_session(self, ctx: AgentContext, turn: ConversationTurn, *, when: str) -> str:
        found = session_files_by_id(ctx.home, SESSION_GLOBS[0])
        if set(found) != {turn.session_id}:
            raise SessionLost(f"{when} turn {turn.number}: Pi session {turn.session_id} is not the one session in "
                              f"$HOME/sessions (sessions there: {sorted(found) or 'none'})")
        if len(found[turn.session_id]) != 1:  # a copy: Pi may resume the stale one
            raise SessionLost(f"{when} turn {turn.number}: Pi session {turn.session_id} is in "
                              f"{len(found[turn.session_id])} files ({', '.join(sorted(found[turn.session_id]))}): "
                              "which one Pi continues is not certain")
        return turn.session_id

    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        if ctx.turn is not None:  # this turn's messages only: the session file holds every turn
            return normalize_messages(stdout_messages(read_jsonl(stdout.decode(errors="replace"))), PI_TOOLS)
        files = self.session_files(ctx)
        if files:
            text = safe_files.read_text(ctx.home, files[-1].relative_to(ctx.home).as_posix())
            return normalize_messages(session_messages(read_jsonl(text)), PI_TOOLS)
        return normalize_messages(stdout_messages(read_jsonl(stdout.decode(errors="replace"))), PI_TOOLS)
