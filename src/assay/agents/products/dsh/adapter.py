"""DeepSeek Harness (PyPI ``deepseek-harness-sdk``; its runtime ships the ``dsh`` command),
run headless as ``dsh --profile headless --json``.

Per attempt: ``DSH_HOME=$HOME/dsh`` (the runtime refuses to guess one) and a patch file adding
the assay gateway as an ``llm-pi-ai`` provider (OpenAI chat completions, key from the
environment) and making it the default model. Telemetry is hard-disabled with
``DSH_TELEMETRY_DISABLED=1``. DSH restricts tools per plugin: the controlled track disables
every tool plugin outside the task's contract, and the session-title model call.

World tools come over MCP: the patch adds DSH's bundled ``@deepseek-ai/dsh-mcp-client`` plugin
(streamable HTTP, server ``assay``), whose tools the model sees as
``mcp__assay__<world>_<tool>_<hash>`` (DSH appends a hash when it has to rename a tool, here the
dot). The bearer header is a ``!!js`` expression reading the per-attempt key from DSH's own
environment, so the key is never written to the patch file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.agents.base import AgentContext, ConversationTurn, SessionLost
from assay.agents.products.common import (KEY_ENV, MCP_SERVER, PROVIDER, TOOLS_KEY_ENV, Launch, ProductAgent,
                                          gateway_v1, mcp_url, python_env)
from assay.agents.products.contract import ToolContract, ToolGroup
from assay.agents.products.dsh import session_format as dsh_format
from assay.agents.products.install import InstallSpec, Installation
from assay.agents.products.normalized import Normalized, read_jsonl
from assay.untrusted import files as safe_files

#: every plugin of the headless profile that offers the model a tool
TOOL_PLUGINS = ("tool-bash", "tool-fs", "tool-fs-search", "tool-jobs", "tool-skill", "tool-subagent-control",
                "tool-subagent-list-agents", "tool-subagent", "tool-subagent-fork", "tool-workflow", "tool-todo",
                "tool-goal", "tool-web", "tool-working-directory", "tool-pwsh", "plan-mode",
                "mcp-resources")  # list/read MCP resources: tools no task's contract names
#: plugins that make extra model calls or reach outside the gateway, off in the controlled track
QUIET_PLUGINS = ("session-title-llm", "session-telemetry-otel")

#: where this adapter reads its native session (a link or special file there is a planted trap)
SESSION_GLOBS = ["dsh/sessions/*/*/session.v4.jsonl.zstd", "dsh/sessions/*/*/session.v4.jsonl"]


class JsExpr(str):
    """A ``!!js`` scalar of a DSH patch: evaluated by DSH when it loads the patch."""


class _PatchDumper(yaml.SafeDumper):
    pass


_PatchDumper.add_representer(JsExpr, lambda d, v: d.represent_scalar("tag:yaml.org,2002:js", str(v)))


def dump_patch(patch: list[dict[str, Any]]) -> str:
    return yaml.dump(patch, Dumper=_PatchDumper, sort_keys=False)


#: the patch row id of the world MCP server (a second instance of the bundled mcp-client plugin)
MCP_PLUGIN_ID = f"mcp-{MCP_SERVER}"


def mcp_patch(url: str) -> dict[str, Any]:
    """The patch row inserting DSH's bundled MCP client, connected to the world tool service (a
    patch row with an ``id`` only edits an existing entry; ``insert`` appends new ones)."""
    return {"insert": [{"id": MCP_PLUGIN_ID, "name": "@deepseek-ai/dsh-mcp-client", "config": {
        "transport": "streamable-http", "serverName": MCP_SERVER, "url": url,
        "headers": {"Authorization": JsExpr(f"'Bearer ' + process.env.{TOOLS_KEY_ENV}")},
        "toolCallTimeoutMs": 3600000, "failOnStartupError": True}}]}


def gateway_patch(base_url: str, model: str, enabled_tools: list[str] | None,
                  mcp: str | None = None) -> list[dict[str, Any]]:
    patch: list[dict[str, Any]] = [
        {"id": "llm-pi-ai", "name": "@deepseek-ai/dsh-llm-pi-ai", "config": {"providers": {PROVIDER: {
            "apiKeyEnv": KEY_ENV, "api": "openai-completions", "baseURL": base_url,
            "compat": {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"},
            "models": [{"id": model}]}}}},
        {"id": "agent-default-model", "config": {"provider": PROVIDER, "model": model}},
    ]
    if enabled_tools is not None:
        patch += [{"id": pid, "disabled": True} for pid in (*TOOL_PLUGINS, *QUIET_PLUGINS) if pid not in enabled_tools]
    if mcp is not None:
        patch.append(mcp_patch(mcp))
    return patch


class DshAgent(ProductAgent):
    name = "dsh"
    kind = "dsh"
    contract = ToolContract("dsh", (
        ToolGroup(("tool-bash",), frozenset({"shell"})),
        ToolGroup(("tool-fs",), frozenset({"read", "write", "edit"})),
        ToolGroup(("tool-fs-search",), frozenset({"list"})),
    ), own_browser="DSH's headless profile has no browser tool (web_fetch and web_search only)")
    install_spec = InstallSpec("dsh", "pip", "deepseek-harness-sdk", "0.2.1rc2", "venv/bin/dsh")
    world_exposure = "mcp"
    fresh_steps = True  # a step afresh: a new session (ProductAgent.run_step)
    session_mechanism = "DSH's own session log under $DSH_HOME/sessions, continued with --session-id"
    seeds_history = False  # its zstd v4 log is seq-numbered runtime state; not written from outside

    def mcp_config(self, ctx: AgentContext, url: str) -> dict[str, Any]:
        return mcp_patch(url)

    def describe(self, track: str) -> dict[str, Any]:
        base = {"command": "dsh --profile headless --json", "route": "llm-pi-ai openai-completions"}
        if track == "controlled":
            return {**base, "permission_mode": "danger-full-access (the assay sandbox is the wall)",
                    "disabled_plugins": "every tool plugin outside the task's contract, plus " + ", ".join(QUIET_PLUGINS)}
        return {**base, "permission_mode": "workspace-write (headless default)", "plugins": "headless profile defaults"}

    def prepare(self, ctx: AgentContext, inst: Installation) -> Launch:
        home = ctx.home_inside
        (ctx.home / "dsh").mkdir(parents=True, exist_ok=True)
        assert ctx.model is not None
        tools = self.native_tools(ctx) if ctx.track == "controlled" else None
        mcp = mcp_url(ctx) if self.uses_mcp(ctx) else None
        patch = gateway_patch(gateway_v1(ctx), ctx.model, tools, mcp)
        (ctx.home / "assay.patch.yml").write_text(dump_patch(patch))
        argv = [str(inst.bin), "--profile", "headless", "--patch", f"{home}/assay.patch.yml", "--json"]
        if ctx.turn is not None and ctx.turn.native_session:  # turn 2 on: continue the session turn 1 made
            argv += ["--session-id", ctx.turn.native_session]
        argv += ["--", ctx.prompt]
        env = {**python_env(inst, home), "DSH_HOME": f"{home}/dsh", "DSH_TELEMETRY_DISABLED": "1",
               "DSH_TELEMETRY_MODE": "OFF", KEY_ENV: ctx.gateway_key or ""}
        if ctx.track == "controlled":
            env["DSH_PERMISSION_MODE"] = "danger-full-access"
        shown = [a if a != ctx.prompt else "<prompt>" for a in argv]
        return Launch(argv, env, config={"argv": shown, "patch": json.loads(json.dumps(gateway_patch(
            "<gateway>/v1", ctx.model, tools, "{ASSAY_TOOLS_URL}/mcp/" if mcp else None))),
                                         "permission_mode": env.get("DSH_PERMISSION_MODE", "default")})

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        events = read_jsonl(stdout.decode(errors="replace"))
        final = next((e.get("text") for e in reversed(events) if e.get("type") == "final"), None)
        end = next((e for e in reversed(events) if e.get("type") == "status" and e.get("phase") == "turn_end"), None)
        return final, safe_files.with_traps(ctx.home, SESSION_GLOBS, {"turn_end": (end or {}).get("reason")})

    def session_logs(self, ctx: AgentContext) -> list[Path]:
        return dsh_format.find_session_logs(ctx.home / "dsh")

    def check_session(self, ctx: AgentContext, turn: ConversationTurn, *, when: str) -> str:
        """DSH names a new session itself (``--session-id`` only adopts an existing one): the
        conversation's session is the one session in this attempt's fresh DSH home, and after
        turn 2 it must still be the one turn 1 made."""
        found = {p.parent.name for p in self.session_logs(ctx)}
        if len(found) != 1 or (turn.native_session is not None and found != {turn.native_session}):
            raise SessionLost(f"{when} turn {turn.number}: the conversation's DSH session is not the one session "
                              f"under $DSH_HOME/sessions (sessions there: {sorted(found) or 'none'})")
        return found.pop()

    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        if ctx.turn is not None:  # this turn's events only: the session log holds every turn
            return dsh_format.normalize_stdout(read_jsonl(stdout.decode(errors="replace")))
        logs = self.session_logs(ctx)
        if logs:
            items = dsh_format.normalize_session(dsh_format.read_session_log(logs[-1], home=ctx.home))
            if items:
                return items
        return dsh_format.normalize_stdout(read_jsonl(stdout.decode(errors="replace")))

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        """The zstd log decompressed to JSONL (artifacts are stored as text), written into the
        attempt folder, never into the agent home."""
        out: dict[str, Path] = {}
        for log in self.session_logs(ctx)[-1:]:
            try:
                events = dsh_format.read_session_log(log, home=ctx.home)
            except OSError:
                continue
            out["dsh.session.v4.jsonl"] = safe_files.write_export(
                ctx.attempt_dir, "dsh.session.v4.jsonl", "".join(json.dumps(e) + "\n" for e in events).encode())
        return out
