"""Hermes Agent (NousResearch, PyPI ``hermes-agent``), run headless as ``hermes -z``.

Per attempt: ``HERMES_HOME=$HOME/hermes`` holds a ``config.yaml`` whose named provider
``custom:assay`` is the assay gateway (chat completions; the key is read from the environment
through ``key_env``, never written to a file). ``--usage-file`` records Hermes' own token
totals and completion flags; its session store is ``state.db``. The controlled track restricts
tools with ``-t`` (toolsets ``terminal`` and ``file``) and skips AGENTS.md/memory/skills.

World tools come over MCP: ``mcp_servers.assay`` in the same ``config.yaml`` is the tool
service's streamable HTTP endpoint (bearer key by Hermes' ``${VAR}`` interpolation); its tools
are ``mcp__assay__<world>_<tool>``; ``-t`` then includes the server's name (``hermes -z`` accepts
an enabled ``mcp_servers`` name as a toolset, not the registry's ``mcp-assay``).

A conversation task runs every turn as ``hermes chat -q <message> -Q --source tool``, which
records the session in ``state.db`` like ``-z`` does but can continue one: turn 2 on (and turn 1
over a replayed history) add ``--resume <id>``, and Hermes loads that session's messages as the
conversation so far (:mod:`.hermes_session`). Chat mode starts an update check against PyPI
unless Hermes' own cache of it is fresh: the cache is written as "up to date".
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from assay.agents.base import AgentContext, ConversationTurn
from assay.agents.history import chat_messages
from assay.agents.products.common import (StepMark, KEY_ENV, MCP_SERVER, PROVIDER, TOOLS_KEY_ENV, Launch, ProductAgent,
                                          gateway_v1, mcp_url, python_env)
from assay.agents.products.contract import ToolContract, ToolGroup
from assay.agents.products.hermes import conversation as hermes_session, session_format as hermes_format
from assay.agents.products.hermes.conversation import STATE_DB, Mark
from assay.agents.products.install import InstallSpec, Installation, NpmTool
from assay.agents.products.native_browser import BROWSER, with_chromium_space
from assay.agents.products.normalized import Normalized
from assay.agents.products.seeding import tool_namer
from assay.errors import AdapterError
from assay.spec.budget import Limits
from assay.spec.load import LoadedTask
from assay.untrusted import files as safe_files
from assay.untrusted.json_text import loads as loads_untrusted

#: where this adapter reads its native session (a link or special file there is a planted trap)
SESSION_GLOBS = ["hermes/state.db", "hermes/state.db-wal", "usage.json"]


#: the ``-t`` entry selecting the world server's tools (``hermes -z`` validates MCP toolsets by server name)
MCP_TOOLSET = MCP_SERVER
#: Hermes' cache of its update check (``hermes_cli.banner.check_for_updates``, 6 hours)
UPDATE_CACHE = ".update_check"


def update_cache(version: str) -> dict[str, Any]:
    """A fresh "up to date" entry of Hermes' update-check cache: chat mode then asks no one."""
    return {"ts": time.time(), "behind": 0, "rev": None, "ver": version}


#: the flags of every conversation turn (approvals bypassed as ``-z`` does; the workspace stays the cwd)
CHAT_FLAGS = ["-Q", "--source", hermes_session.SOURCE, "--yolo", "--no-restore-cwd"]


def mcp_servers(url: str) -> dict[str, Any]:
    """Hermes' ``mcp_servers`` block: the world tool service as one streamable HTTP server."""
    return {MCP_SERVER: {"url": url, "headers": {"Authorization": "Bearer ${" + TOOLS_KEY_ENV + "}"},
                         "timeout": 3600, "connect_timeout": 20,
                         # its content-type probe GETs the endpoint, whose (valid) SSE stream never ends:
                         # 5 s lost, and the discovery then misses the one-shot turn's tool snapshot
                         "skip_preflight": True}}


def hermes_config(base_url: str, model: str, mcp: str | None = None, *, browser: bool = False) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "model": {"provider": f"custom:{PROVIDER}", "default": model},
        "providers": {PROVIDER: {"base_url": base_url, "key_env": KEY_ENV, "default_model": model,
                                 "transport": "chat_completions"}},
        "approvals": {"mode": "off", "cron_mode": "deny"},
        "security": {"tirith_enabled": False},
        "memory": {"memory_enabled": False, "user_profile_enabled": False},
        "display": {"show_token_analytics": False},
    }
    if mcp is not None:
        cfg["mcp_servers"] = mcp_servers(mcp)
    if browser:  # the app is a loopback address in the sandbox: Hermes' SSRF guard refuses it otherwise
        cfg["browser"] = {"allow_private_urls": True}
    return cfg


#: the agent-browser CLI Hermes' browser_* tools drive (its npm package ships prebuilt binaries)
AGENT_BROWSER = NpmTool("browser", "agent-browser", "0.41.2", "agent-browser", "bin/agent-browser-linux-x64")


def browser_env(root: Path, path: str) -> dict[str, str]:
    """agent-browser on PATH, over Debian's Chromium in the sandbox (whose namespaces bwrap already
    took: no Chromium sandbox), with its update check off."""
    return {"PATH": f"{root / AGENT_BROWSER.label / 'bin'}:{path}",
            "AGENT_BROWSER_EXECUTABLE_PATH": "/usr/bin/chromium", "AGENT_BROWSER_ARGS": "--no-sandbox",
            "AGENT_BROWSER_NO_VERSION_CHECK": "1"}


class HermesAgent(ProductAgent):
    name = "hermes"
    kind = "hermes"
    contract = ToolContract("hermes", (
        ToolGroup(("terminal",), frozenset({"shell"})),
        ToolGroup(("file",), frozenset({"read", "write", "edit", "list"})),
        ToolGroup(("browser",), frozenset({BROWSER})),
    ))
    # the mcp extra brings Hermes' MCP client (the ``mcp`` SDK); without it Hermes ignores mcp_servers;
    # its browser_* tools drive the agent-browser CLI, which hermes-agent does not bring: a part from npm
    install_spec = InstallSpec("hermes", "pip", "hermes-agent", "0.19.0", "venv/bin/hermes", extras=("mcp",),
                               parts=(("mcp", "venv/lib/python*/site-packages/mcp/__init__.py"),),
                               npm_tools=(AGENT_BROWSER,))
    browser_part = AGENT_BROWSER.label
    world_exposure = "mcp"
    mcp_part = "mcp"  # the hermes-agent[mcp] extra: without the mcp SDK Hermes ignores mcp_servers
    fresh_steps = True  # a step afresh: a new session (ProductAgent.run_step)
    session_mechanism = ("Hermes' own session in $HERMES_HOME/state.db: every turn is hermes chat -q -Q, "
                         "continued with --resume <id>")
    seeds_history = True  # written by Hermes' own SessionDB, in the sandbox, before turn 1

    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        return mcp_servers(url)

    def limits(self, limits: Limits, task: LoadedTask | None = None) -> Limits:
        """With its own browser allowed, RLIMIT_AS is raised for Chromium (memory stays bounded)."""
        return with_chromium_space(limits, task)

    def describe(self, track: str) -> dict[str, Any]:
        base = {"command": "hermes -z <prompt> --usage-file",
                "conversation_command": "hermes chat -q <message> " + " ".join(CHAT_FLAGS) + " [--resume <id>]",
                "provider": "custom:assay (chat_completions)"}
        if track == "controlled":
            return {**base, "flags": ["-t", "<toolsets: terminal,file>", "--ignore-rules"],
                    "config": hermes_config("<gateway>/v1", "<model>")}
        return {**base, "toolsets": "hermes-cli (default)", "config": hermes_config("<gateway>/v1", "<model>")}

    def prepare(self, ctx: AgentContext, inst: Installation) -> Launch:
        home = ctx.home_inside
        hh = ctx.home / "hermes"
        hh.mkdir(parents=True, exist_ok=True)
        assert ctx.model is not None
        mcp = mcp_url(ctx) if self.uses_mcp(ctx) else None
        browser = BROWSER in self.tool_plan(ctx.task, ctx.tools, ctx.world_tools).neutral
        cfg = hermes_config(gateway_v1(ctx), ctx.model, mcp, browser=browser)
        (hh / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        if ctx.turn is not None:  # chat mode checks PyPI for updates unless its own 6-hour cache is fresh
            (hh / UPDATE_CACHE).write_text(json.dumps(update_cache(inst.version)))
        if ctx.turn is None:
            argv = [str(inst.bin), "-z", ctx.prompt, "--usage-file", f"{home}/usage.json"]
        else:  # a conversation turn: chat mode can resume the conversation's session
            argv = [str(inst.bin), "chat", f"--query={ctx.prompt}", *CHAT_FLAGS]
            resume = ctx.turn.native_session or (ctx.turn.session_id if ctx.turn.history else None)
            if resume is not None:
                argv += ["--resume", resume]
        argv += ["-m", ctx.model, "--provider", f"custom:{PROVIDER}"]
        if ctx.track == "controlled":
            toolsets = self.native_tools(ctx) + ([MCP_TOOLSET] if mcp else [])
            argv += ["-t", ",".join(toolsets), "--ignore-rules"]
        env = {**python_env(inst, home), "HERMES_HOME": f"{home}/hermes", KEY_ENV: ctx.gateway_key or ""}
        if browser:
            env = {**env, **browser_env(inst.root, env["PATH"])}
        shown = ["<prompt>" if a == ctx.prompt else "--query=<message>" if a == f"--query={ctx.prompt}" else a
                 for a in argv]
        return Launch(argv, env, config={"argv": shown, "config.yaml": hermes_config(
            "<gateway>/v1", ctx.model, "{ASSAY_TOOLS_URL}/mcp/" if mcp else None, browser=browser)})

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        text = stdout.decode(errors="replace").strip()
        facts: dict[str, Any] = {}
        if safe_files.is_file(ctx.home, "usage.json"):
            try:
                data = loads_untrusted(safe_files.read_text(ctx.home, "usage.json"))
                facts = {k: data.get(k) for k in ("completed", "failed", "api_calls", "session_id", "total_tokens")}
            except (OSError, ValueError, AttributeError):
                facts = {"usage_file": "unreadable"}
        return (text[-4000:] or None), safe_files.with_traps(ctx.home, SESSION_GLOBS, facts)

    # ------------------------------------------------------------------ conversations
    async def seed_session(self, ctx: AgentContext, turn: ConversationTurn) -> None:
        """The history written into ``state.db`` by Hermes' own ``SessionDB``, run with Hermes'
        Python in the sandbox (the agent has not run yet); turn 1 then resumes it."""
        inst = self.require()
        name = tool_namer(hermes_format.HERMES_TOOLS.to_neutral, f"mcp__{MCP_SERVER}__" if self.uses_mcp(ctx) else None)
        payload = hermes_session.seed_payload(turn.session_id, ctx.sandbox.workspace_path, ctx.model or "",
                                              chat_messages(turn.history, name))
        (ctx.home / "hermes").mkdir(parents=True, exist_ok=True)
        env = {**python_env(inst, ctx.home_inside), "HERMES_HOME": f"{ctx.home_inside}/hermes"}
        res = await ctx.sandbox.exec([str(inst.root / "venv" / "bin" / "python"), "-c", hermes_session.SEED_SCRIPT],
                                     env=env, cwd=ctx.sandbox.workspace_path, timeout_s=min(120.0, ctx.timeout_s),
                                     stdin=payload)
        if res.exit_code != 0 or res.timed_out:
            raise AdapterError(f"hermes: its SessionDB could not write the history into state.db (exit "
                               f"{res.exit_code}): {res.stderr.decode(errors='replace')[-1000:]}", reason="seed_failed")
        hermes_session.the_session(ctx.home, "after writing the history", turn.session_id)

    def check_session(self, ctx: AgentContext, turn: ConversationTurn, *, when: str) -> str:
        """The one session in ``state.db`` (the seeded id when a history was replayed); before
        turn N it must hold the N-1 user messages of the turns before."""
        expected = turn.session_id if turn.number == 1 and turn.history else turn.native_session
        session = hermes_session.the_session(ctx.home, f"{when} turn {turn.number}", expected,
                                             turn.number - 1 if when == "before" else 0)
        return str(session["id"])

    def turn_mark(self, ctx: AgentContext, turn: ConversationTurn) -> Mark:
        if not hermes_session.present(ctx.home):
            return Mark()  # turn 1 without a history: Hermes creates the store
        return hermes_session.mark_of(hermes_session.the_session(ctx.home, f"before turn {turn.number}", None))

    def sessions_before(self, ctx: AgentContext) -> frozenset[str]:
        if not hermes_session.present(ctx.home):
            return frozenset()
        return frozenset(str(x.get("id")) for x in hermes_session.sessions(ctx.home, "before the step"))

    def read_turn(self, ctx: AgentContext, stdout: bytes, since: object) -> list[Normalized]:
        """What this turn added to the conversation's session (messages after the mark, tokens
        since it); for a step of a multi-step task, the one session the step made, whole."""
        if not hermes_session.present(ctx.home):
            return []
        if isinstance(since, StepMark):
            new = [x for x in hermes_session.sessions(ctx.home, "reading the step") if str(x.get("id")) not in since.before]
            if len(new) != 1:
                raise ValueError(f"the step made {len(new)} Hermes sessions, not one: which is its own is not certain")
            return hermes_format.normalize(new[0])
        session = hermes_session.the_session(ctx.home, "reading the turn", None)
        return hermes_format.normalize(hermes_session.since(session, since if isinstance(since, Mark) else Mark()))

    def state_db(self, ctx: AgentContext) -> Path:
        return ctx.home / STATE_DB

    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        if not safe_files.is_file(ctx.home, STATE_DB):
            return []
        items: list[Normalized] = []
        for session in hermes_format.read_state_db(self.state_db(ctx), home=ctx.home):
            items.extend(hermes_format.normalize(session))
        return items

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        """``state.db`` is binary: its sessions are exported as JSONL (the shape of ``hermes sessions export``)."""
        out: dict[str, Path] = {}
        if safe_files.is_file(ctx.home, STATE_DB):
            try:
                sessions = hermes_format.read_state_db(self.state_db(ctx), home=ctx.home)
            except Exception:  # noqa: BLE001
                sessions = []
            out["hermes.sessions.jsonl"] = safe_files.write_export(
                ctx.attempt_dir, "hermes.sessions.jsonl",
                "".join(json.dumps(s, default=str) + "\n" for s in sessions).encode())
        try:
            out["hermes.usage.json"] = safe_files.copy_out(ctx.home, "usage.json", ctx.attempt_dir, "hermes.usage.json")
        except OSError:
            pass
        return out
