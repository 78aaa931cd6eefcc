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
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.agents.base import AgentContext
from assay.agents.products import contract, hermes_format, safe_files
from assay.agents.products.common import (KEY_ENV, MCP_SERVER, PROVIDER, TOOLS_KEY_ENV, Launch, ProductAgent,
                                          gateway_v1, mcp_url, python_env)
from assay.agents.products.install import Installation
from assay.agents.products.normalized import Normalized

#: where this adapter reads its native session (a link or special file there is a planted trap)
SESSION_GLOBS = ["hermes/state.db", "hermes/state.db-wal", "usage.json"]


#: the ``-t`` entry selecting the world server's tools (``hermes -z`` validates MCP toolsets by server name)
MCP_TOOLSET = MCP_SERVER
STATE_DB = "hermes/state.db"  # relative to the agent home


def mcp_servers(url: str) -> dict[str, Any]:
    """Hermes' ``mcp_servers`` block: the world tool service as one streamable HTTP server."""
    return {MCP_SERVER: {"url": url, "headers": {"Authorization": "Bearer ${" + TOOLS_KEY_ENV + "}"},
                         "timeout": 3600, "connect_timeout": 20,
                         # its content-type probe GETs the endpoint, whose (valid) SSE stream never ends:
                         # 5 s lost, and the discovery then misses the one-shot turn's tool snapshot
                         "skip_preflight": True}}


def hermes_config(base_url: str, model: str, mcp: str | None = None) -> dict[str, Any]:
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
    return cfg


class HermesAgent(ProductAgent):
    name = "hermes"
    kind = "hermes"
    contract = contract.HERMES
    world_exposure = "mcp"
    mcp_part = "mcp"  # the hermes-agent[mcp] extra: without the mcp SDK Hermes ignores mcp_servers

    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        return mcp_servers(url)

    def describe(self, track: str) -> dict[str, Any]:
        base = {"command": "hermes -z <prompt> --usage-file", "provider": "custom:assay (chat_completions)"}
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
        cfg = hermes_config(gateway_v1(ctx), ctx.model, mcp)
        (hh / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        argv = [str(inst.bin), "-z", ctx.prompt, "--usage-file", f"{home}/usage.json", "-m", ctx.model,
                "--provider", f"custom:{PROVIDER}"]
        if ctx.track == "controlled":
            toolsets = self.native_tools(ctx) + ([MCP_TOOLSET] if mcp else [])
            argv += ["-t", ",".join(toolsets), "--ignore-rules"]
        env = {**python_env(inst, home), "HERMES_HOME": f"{home}/hermes", KEY_ENV: ctx.gateway_key or ""}
        shown = [a if a != ctx.prompt else "<prompt>" for a in argv]
        return Launch(argv, env, config={"argv": shown, "config.yaml": hermes_config(
            "<gateway>/v1", ctx.model, "{ASSAY_TOOLS_URL}/mcp/" if mcp else None)})

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        text = stdout.decode(errors="replace").strip()
        facts: dict[str, Any] = {}
        if safe_files.is_file(ctx.home, "usage.json"):
            try:
                data = json.loads(safe_files.read_text(ctx.home, "usage.json"))
                facts = {k: data.get(k) for k in ("completed", "failed", "api_calls", "session_id", "total_tokens")}
            except (OSError, ValueError, AttributeError, RecursionError):
                facts = {"usage_file": "unreadable"}
        return (text[-4000:] or None), safe_files.with_traps(ctx.home, SESSION_GLOBS, facts)

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
