"""OpenClaw, run headless as ``openclaw agent exec --json`` (its recommended CI entry point).

Per attempt: ``$HOME/openclaw.json`` (JSON is valid JSON5) replaces every model catalog with
the assay gateway as an ``openai-completions`` provider, key by ``${VAR}`` substitution;
``$HOME/state`` (pre-created: ``agent exec`` never creates it) holds the SQLite session store.
Telemetry and update checks are off. The controlled track allows exactly the task's tools and
turns off Tool Search and Code Mode, which would otherwise reach tools outside the contract.

World tools come over MCP: ``mcp.servers.assay`` is the tool service's streamable HTTP
endpoint (bearer key by ``${VAR}`` substitution), whose tools OpenClaw offers as
``assay__<world>_<tool>``; ``tools.allow`` gains ``assay__*``.

A conversation task runs every turn as ``openclaw agent --local --session-id <id>`` (``agent
exec`` cannot continue a session), with the config ``agent exec`` would have composed
(:mod:`.openclaw_session`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from assay.agents.base import AgentContext, ConversationTurn
from assay.agents.history import chat_messages
from assay.agents.products.common import (StepMark, KEY_ENV, MCP_SERVER, PROVIDER, TOOLS_KEY_ENV, Launch, ProductAgent,
                                          gateway_v1, mcp_url, node_env)
from assay.agents.products.contract import ToolContract, ToolGroup, single
from assay.agents.products.install import InstallSpec, Installation
from assay.agents.products.normalized import Normalized
from assay.agents.products.openclaw import conversation as openclaw_session, session_format as openclaw_format
from assay.agents.products.pi.conversation import EPOCH_MS, seeded_session
from assay.agents.products.pi.session_format import OPENCLAW_TOOLS
from assay.agents.products.seeding import tool_namer
from assay.spec.load import LoadedTask
from assay.errors import AdapterError
from assay.spec.budget import Limits
from assay.untrusted import files as safe_files

#: tools that reach other tools or other sessions: never offered in the controlled track
ALWAYS_DENIED = ["apply_patch", "tool_search", "tool_describe", "tool_call", "sessions_*", "group:web", "group:memory",
                 "group:ui", "browser", "cron", "automations", "code_execution"]

#: where this adapter reads its native session (a link or special file there is a planted trap)
SESSION_GLOBS = ["state/agents/*/agent/*.sqlite", "state/agents/*/agent/*.sqlite-wal"]


#: how each turn of a conversation runs (``agent exec`` always starts a fresh session)
CONVERSATION_COMMAND = "openclaw agent --local --session-id <id> --json (plus agent exec's config defaults)"

#: the ``tools.allow`` entry for exactly the world server's tools (OpenClaw's MCP tool prefix)
MCP_TOOLS = f"{MCP_SERVER}__*"


def mcp_servers(url: str) -> dict[str, Any]:
    """OpenClaw's ``mcp`` block: the world tool service as one streamable HTTP server."""
    return {"servers": {MCP_SERVER: {"url": url, "transport": "streamable-http",
                                     "headers": {"Authorization": "Bearer ${" + TOOLS_KEY_ENV + "}"},
                                     "requestTimeoutMs": 3600000, "connectionTimeoutMs": 20000}}}


def openclaw_config(base_url: str, model: str, allow: list[str] | None, mcp: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "models": {"mode": "replace", "providers": {PROVIDER: {
            "baseUrl": base_url, "apiKey": "${" + KEY_ENV + "}", "api": "openai-completions",
            "models": [{"id": model, "name": model, "reasoning": False, "input": ["text"],
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                        "contextWindow": 128000, "maxTokens": 4096}]}}},
        "agents": {"defaults": {"model": {"primary": f"{PROVIDER}/{model}"}}},
        "update": {"checkOnStart": False},
        "telemetry": {"enabled": False},
    }
    if mcp is not None:
        cfg["mcp"] = mcp_servers(mcp)
        if allow is not None:
            allow = [*allow, MCP_TOOLS]
    if allow is not None:
        cfg["tools"] = {"profile": "coding", "allow": allow, "deny": ALWAYS_DENIED, "toolSearch": False,
                        "codeMode": {"enabled": False}}
    return cfg


class OpenClawAgent(ProductAgent):
    name = "openclaw"
    kind = "openclaw"
    contract = ToolContract("openclaw", (
        ToolGroup(("exec", "process"), frozenset({"shell"})),
        *single({"read": "read", "write": "write", "edit": "edit", "ls": "list"}),
    ), own_browser="OpenClaw's browser tool is a plugin of the OpenClaw Gateway; tried in the agent's sandbox, a "
                   "Gateway started there drives Chromium to the served app, but `openclaw agent exec` (the embedded "
                   "agent assay drives) does not offer the model its browser tool, even allowed with a Gateway "
                   "running, and the Gateway's workers leave its process group (docs/browser.md)")
    install_spec = InstallSpec("openclaw", "npm", "openclaw", "2026.9.6", "node_modules/.bin/openclaw", node="24")
    world_exposure = "mcp"
    #: Node reserves address space per worker thread: OpenClaw does not start under RLIMIT_AS
    #: below this (measured: fails at 8192 MiB, runs at 16384 MiB). Real memory use is far lower.
    min_address_space_mb = 16384
    fresh_steps = True  # a step afresh: a new session (ProductAgent.run_step)
    session_mechanism = ("OpenClaw's own session in its SQLite store ($HOME/state): every turn is "
                         "openclaw agent --local --session-id <id>")
    seeds_history = True  # its legacy session files, imported by its own doctor --session-sqlite import

    def limits(self, limits: Limits, task: LoadedTask | None = None) -> Limits:
        if limits.memory_mb is not None and limits.memory_mb < self.min_address_space_mb:
            return limits.model_copy(update={"memory_mb": self.min_address_space_mb})
        return limits

    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        return mcp_servers(url)

    def describe(self, track: str) -> dict[str, Any]:
        if track == "controlled":
            return {"command": "openclaw agent exec --json", "conversation_command": CONVERSATION_COMMAND,
                    "tools.profile": "coding",
                    "tools.allow": "<task tools mapped onto exec/process/read/write/edit/ls>",
                    "tools.deny": ALWAYS_DENIED, "toolSearch": False, "codeMode": False}
        return {"command": "openclaw agent exec --json", "tools": "agent exec defaults (coding profile)",
                "conversation_command": CONVERSATION_COMMAND}

    def prepare(self, ctx: AgentContext, inst: Installation) -> Launch:
        home = ctx.home_inside
        (ctx.home / "state").mkdir(parents=True, exist_ok=True)
        assert ctx.model is not None
        allow = self.native_tools(ctx) if ctx.track == "controlled" else None
        mcp = mcp_url(ctx) if self.uses_mcp(ctx) else None
        cfg = openclaw_config(gateway_v1(ctx), ctx.model, allow, mcp)
        shown = openclaw_config("<gateway>/v1", ctx.model, allow, "{ASSAY_TOOLS_URL}/mcp/" if mcp else None)
        timeout = max(10, math.floor(ctx.timeout_s) - 5)  # its own deadline first, so it can write its session
        env = {**self.openclaw_env(ctx, inst, paths=ctx.turn is not None), KEY_ENV: ctx.gateway_key or ""}
        if ctx.turn is None:
            (ctx.home / "prompt.md").write_text(ctx.prompt)
            argv = [str(inst.bin), "agent", "exec", "--config", f"{home}/openclaw.json", "--state-dir",
                    f"{home}/state", "--cwd", ctx.sandbox.workspace_path, "--model", f"{PROVIDER}/{ctx.model}",
                    "--timeout", str(timeout), "--json", "--message-file", f"{home}/prompt.md"]
        else:  # a conversation turn: the embedded agent continues the conversation's session
            defaults = openclaw_session.exec_defaults(ctx.sandbox.workspace_path)
            cfg, shown = openclaw_session.merge(defaults, cfg), openclaw_session.merge(defaults, shown)
            argv = [str(inst.bin), "agent", "--local", "--session-id", ctx.turn.session_id, "--model",
                    f"{PROVIDER}/{ctx.model}", "--timeout", str(timeout), "--json", f"--message={ctx.prompt}"]
        (ctx.home / "openclaw.json").write_text(json.dumps(cfg, indent=2))
        return Launch(argv, env, config={"argv": [a if not a.startswith("--message=") else "--message=<message>"
                                                  for a in argv], "openclaw.json": shown})

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        """The ``--json`` envelope of ``agent exec`` (``ok``, ``status``, ``final``, usage, tool
        summary) or of ``agent --local`` (``payloads`` and ``meta``)."""
        text = stdout.decode(errors="replace").strip()
        env = None
        start = text.find("{")
        while start != -1 and env is None:
            try:
                env = json.loads(text[start:])
            except json.JSONDecodeError:
                start = text.find("\n{", start + 1)
                start = start + 1 if start != -1 else -1
        if not isinstance(env, dict):
            return (text[-4000:] or None), safe_files.with_traps(ctx.home, SESSION_GLOBS, {})
        if "final" not in env and isinstance(env.get("meta"), dict):  # agent --local
            meta = env["meta"]
            agent = meta.get("agentMeta") if isinstance(meta.get("agentMeta"), dict) else {}
            payloads = [p.get("text") for p in env.get("payloads") or [] if isinstance(p, dict)]
            final = "\n\n".join(t for t in payloads if isinstance(t, str) and t) or None
            facts = {"aborted": meta.get("aborted"), "stopReason": meta.get("stopReason"),
                     "assistantTurns": agent.get("assistantTurns"), "costUsd": agent.get("costUsd"),
                     "sessionId": agent.get("sessionId")}
            return final, safe_files.with_traps(ctx.home, SESSION_GLOBS, facts)
        facts = {k: env.get(k) for k in ("ok", "status", "assistantTurns", "toolSummary", "costUsd", "sessionId")}
        return (env.get("final") or None), safe_files.with_traps(ctx.home, SESSION_GLOBS, facts)

    # ------------------------------------------------------------------ conversations
    def openclaw_env(self, ctx: AgentContext, inst: Installation, *, paths: bool) -> dict[str, str]:
        """OpenClaw's environment: no update checks, no channels; with ``paths`` the config and
        state dir by environment (``agent --local`` and ``doctor`` take no ``--config``/``--state-dir``)."""
        home = ctx.home_inside
        env = {**node_env(inst, home), "OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_SKIP_CHANNELS": "1",
               "OPENCLAW_HOME": f"{home}/.openclaw"}
        if paths:
            env |= {"OPENCLAW_CONFIG_PATH": f"{home}/openclaw.json", "OPENCLAW_STATE_DIR": f"{home}/state"}
        return env

    async def seed_session(self, ctx: AgentContext, turn: ConversationTurn) -> None:
        """The history as OpenClaw's legacy session files in the fresh state dir, imported into
        its SQLite store by its own importer in the sandbox; turn 1 then continues that session."""
        inst = self.require()
        name = tool_namer(OPENCLAW_TOOLS.to_neutral, f"{MCP_SERVER}__" if self.uses_mcp(ctx) else None, dot="-")
        sid, msgs = turn.session_id, chat_messages(turn.history, name)
        text = seeded_session(sid, ctx.sandbox.workspace_path, msgs, model=ctx.model or "", provider=PROVIDER)
        store = openclaw_session.legacy_store(sid, EPOCH_MS + 1000 * (len(msgs) + 1))
        safe_files.write_new(ctx.home, f"{openclaw_session.LEGACY_DIR}/{sid}.jsonl", text.encode())
        safe_files.write_new(ctx.home, f"{openclaw_session.LEGACY_DIR}/sessions.json", json.dumps(store).encode())
        res = await ctx.sandbox.exec([str(inst.bin), *openclaw_session.IMPORT_ARGS], env=self.openclaw_env(ctx, inst, paths=True),
                                     cwd=ctx.sandbox.workspace_path, timeout_s=min(180.0, ctx.timeout_s))
        if res.exit_code != 0 or res.timed_out:
            raise AdapterError(f"openclaw: its session importer failed on the history (exit {res.exit_code}): "
                               f"{res.stderr.decode(errors='replace')[-1000:]}", reason="seed_failed")
        imported = openclaw_session.messages(openclaw_session.check(ctx.home, sid, "after importing the history"))
        if len(imported) != len(msgs):
            raise AdapterError(f"openclaw: its importer kept {len(imported)} of the history's {len(msgs)} messages",
                               reason="seed_failed")

    def check_session(self, ctx: AgentContext, turn: ConversationTurn, *, when: str) -> str:
        """The conversation's session (its id is ours: ``--session-id``) must be the one session
        in the agent's database; before turn N it holds the N-1 user messages of the turns before."""
        openclaw_session.check(ctx.home, turn.session_id, f"{when} turn {turn.number}",
                               turn.number - 1 if when == "before" else 0)
        return turn.session_id

    def turn_mark(self, ctx: AgentContext, turn: ConversationTurn) -> openclaw_session.Mark:
        if turn.number == 1 and not turn.history:
            return openclaw_session.Mark()  # OpenClaw creates the store
        return openclaw_session.mark_of(openclaw_session.check(ctx.home, turn.session_id, f"before turn {turn.number}"))

    def read_turn(self, ctx: AgentContext, stdout: bytes, since: object) -> list[Normalized]:
        """What this turn added to the conversation's session (transcript and runtime events after the
        mark); for a step of a multi-step task, the step's own session (named by its id) whole."""
        assert ctx.turn is not None
        if isinstance(since, StepMark):
            store = openclaw_session.read_store(ctx.home, "reading the step")
            sid = ctx.turn.session_id
            return openclaw_format.normalize([e for s, _, e in store.transcript if s == sid],
                                             [e for s, _, e in store.runtime if s == sid])
        store = openclaw_session.check(ctx.home, ctx.turn.session_id, "reading the turn")
        return openclaw_session.turn_events(store, since if isinstance(since, openclaw_session.Mark)
                                            else openclaw_session.Mark())

    def databases(self, ctx: AgentContext) -> list[Path]:
        return openclaw_format.find_databases(ctx.home / "state")

    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        items: list[Normalized] = []
        for db in self.databases(ctx):
            transcript, runtime = openclaw_format.read_database(db, home=ctx.home)
            items.extend(openclaw_format.normalize(transcript, runtime))
        return items

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        """The SQLite store is binary: its transcript and runtime events are exported as JSONL into the
        attempt folder (never into the agent home)."""
        out: dict[str, Path] = {}
        for db in self.databases(ctx):
            try:
                transcript, runtime = openclaw_format.read_database(db, home=ctx.home)
            except Exception:  # noqa: BLE001 - a torn database still leaves the stdout envelope
                continue
            for label, rows in (("transcript", transcript), ("runtime", runtime)):
                name = f"openclaw.{db.parent.parent.name}.{label}.jsonl"
                out[name] = safe_files.write_export(ctx.attempt_dir, name,
                                                    "".join(json.dumps(r) + "\n" for r in rows).encode())
        return out
