"""DeepSeek Harness (PyPI ``deepseek-harness-sdk``; its runtime ships the ``dsh`` command),
run headless as ``dsh --profile headless --json``.

Per attempt: ``DSH_HOME=$HOME/dsh`` (the runtime refuses to guess one) and a patch file adding
the assay gateway as an ``llm-pi-ai`` provider (OpenAI chat completions, key from the
environment) and making it the default model. Telemetry is hard-disabled with
``DSH_TELEMETRY_DISABLED=1``. DSH restricts tools per plugin: the controlled track disables
every tool plugin outside the task's contract, and the session-title model call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from assay.agents.base import AgentContext
from assay.agents.products import contract, dsh_format
from assay.agents.products.common import KEY_ENV, PROVIDER, Launch, ProductAgent, gateway_v1, python_env
from assay.agents.products.install import Installation
from assay.agents.products.normalized import Normalized, read_jsonl

#: every plugin of the headless profile that offers the model a tool
TOOL_PLUGINS = ("tool-bash", "tool-fs", "tool-fs-search", "tool-jobs", "tool-skill", "tool-subagent-control",
                "tool-subagent-list-agents", "tool-subagent", "tool-subagent-fork", "tool-workflow", "tool-todo",
                "tool-goal", "tool-web", "tool-working-directory", "tool-pwsh", "plan-mode")
#: plugins that make extra model calls or reach outside the gateway, off in the controlled track
QUIET_PLUGINS = ("session-title-llm", "session-telemetry-otel")


def gateway_patch(base_url: str, model: str, enabled_tools: list[str] | None) -> list[dict[str, Any]]:
    patch: list[dict[str, Any]] = [
        {"id": "llm-pi-ai", "name": "@deepseek-ai/dsh-llm-pi-ai", "config": {"providers": {PROVIDER: {
            "apiKeyEnv": KEY_ENV, "api": "openai-completions", "baseURL": base_url,
            "compat": {"supportsDeveloperRole": False, "maxTokensField": "max_tokens"},
            "models": [{"id": model}]}}}},
        {"id": "agent-default-model", "config": {"provider": PROVIDER, "model": model}},
    ]
    if enabled_tools is not None:
        patch += [{"id": pid, "disabled": True} for pid in (*TOOL_PLUGINS, *QUIET_PLUGINS) if pid not in enabled_tools]
    return patch


class DshAgent(ProductAgent):
    name = "dsh"
    kind = "dsh"
    contract = contract.DSH

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
        patch = gateway_patch(gateway_v1(ctx), ctx.model, tools)
        (ctx.home / "assay.patch.yml").write_text(yaml.safe_dump(patch, sort_keys=False))
        argv = [str(inst.bin), "--profile", "headless", "--patch", f"{home}/assay.patch.yml", "--json", "--", ctx.prompt]
        env = {**python_env(inst, home), "DSH_HOME": f"{home}/dsh", "DSH_TELEMETRY_DISABLED": "1",
               "DSH_TELEMETRY_MODE": "OFF", KEY_ENV: ctx.gateway_key or ""}
        if ctx.track == "controlled":
            env["DSH_PERMISSION_MODE"] = "danger-full-access"
        shown = [a if a != ctx.prompt else "<prompt>" for a in argv]
        return Launch(argv, env, config={"argv": shown, "patch": gateway_patch("<gateway>/v1", ctx.model, tools),
                                         "permission_mode": env.get("DSH_PERMISSION_MODE", "default")})

    def completion(self, ctx: AgentContext, stdout: bytes) -> tuple[str | None, dict[str, Any]]:
        events = read_jsonl(stdout.decode(errors="replace"))
        final = next((e.get("text") for e in reversed(events) if e.get("type") == "final"), None)
        end = next((e for e in reversed(events) if e.get("type") == "status" and e.get("phase") == "turn_end"), None)
        return final, {"turn_end": (end or {}).get("reason")}

    def session_logs(self, ctx: AgentContext) -> list[Path]:
        return dsh_format.find_session_logs(ctx.home / "dsh")

    def read_session(self, ctx: AgentContext, stdout: bytes) -> list[Normalized]:
        logs = self.session_logs(ctx)
        if logs:
            items = dsh_format.normalize_session(dsh_format.read_session_log(logs[-1]))
            if items:
                return items
        return dsh_format.normalize_stdout(read_jsonl(stdout.decode(errors="replace")))

    def native_files(self, ctx: AgentContext) -> dict[str, Path]:
        """The zstd log decompressed to JSONL (artifacts are stored as text)."""
        out: dict[str, Path] = {}
        for log in self.session_logs(ctx)[-1:]:
            p = ctx.home / "dsh.session.v4.jsonl"
            events = dsh_format.read_session_log(log)
            p.write_text("".join(json.dumps(e) + "\n" for e in events))
            out[p.name] = p
        return out
