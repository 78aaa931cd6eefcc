"""The generic ``command`` adapter: any CLI agent from a template.

A YAML file describes the agent::

    name: my-agent
    kind: command
    command: ["my-agent", "--yes", "--prompt", "{prompt}"]   # or a string run by /bin/sh -c
    version_command: ["my-agent", "--version"]
    prompt_via: arg          # arg | stdin | file ({prompt_file} is then a file in the agent home)
    env: {OPENAI_BASE_URL: "{endpoint}/v1", OPENAI_API_KEY: "{api_key}"}
    files:                   # written into the fresh per-attempt home before the run
      .config/my-agent/config.json: '{"baseUrl": "{endpoint}/v1", "model": "{model}"}'
    needs_gateway: true
    mounts: ["/opt/my-agent"]  # extra read-only paths the agent needs inside the sandbox

Placeholders: ``{prompt}``, ``{prompt_file}``, ``{workspace}``, ``{endpoint}``, ``{api_key}``,
``{model}``, ``{home}``, ``{task_id}``. Unknown placeholders are an error before the run.
"""

from __future__ import annotations

import os
import shutil
import string
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome
from assay.errors import AgentUnavailable
from assay.sandbox.base import Mount
from assay.spec.load import LoadedTask

PLACEHOLDERS = {"prompt", "prompt_file", "workspace", "endpoint", "api_key", "model", "home", "task_id"}


class CommandAgentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    kind: Literal["command"] = "command"
    command: str | list[str]
    version_command: str | list[str] | None = None
    version: str | None = None
    prompt_via: Literal["arg", "stdin", "file"] = "arg"
    env: dict[str, str] = Field(default_factory=dict)
    files: dict[str, str] = Field(default_factory=dict)
    needs_gateway: bool = False
    mounts: list[str] = Field(default_factory=list)
    tools: list[str] | None = Field(None, description="Tools this agent can offer; tasks needing others are skipped.")


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def render(template: str, values: dict[str, str]) -> str:
    """Fill placeholders without touching other braces (JSON in config files stays intact)."""
    out = template
    for key, val in values.items():
        out = out.replace("{" + key + "}", val)
    return out


def _templates(spec: CommandAgentSpec) -> list[str]:
    cmd = [spec.command] if isinstance(spec.command, str) else list(spec.command)
    return [*cmd, *spec.env.values(), *spec.files.values(), *spec.files.keys()]


def sandboxed_version(command: str | list[str], mounts: list[Path]) -> tuple[int | None, str, str]:
    """Run an agent's ``version_command`` in the default sandbox (never on the host with the
    harness's environment): empty workspace, no network, the agent's mounts read-only."""
    import asyncio
    import concurrent.futures
    import tempfile

    from assay.sandbox.base import SandboxSpec
    from assay.sandbox.registry import default_backend_name, get_backend
    from assay.spec.budget import NetworkProfile

    async def go() -> tuple[int | None, str, str]:
        with tempfile.TemporaryDirectory(prefix="assay-version-") as ws:
            os.chmod(ws, 0o755)
            sb = await get_backend(default_backend_name()).create(SandboxSpec(
                workspace=Path(ws), network=NetworkProfile.none, mounts=tuple(Mount(m, str(m)) for m in mounts
                                                                              if m.exists()), label="version"))
            try:
                argv = list(command) if isinstance(command, list) else ["/bin/sh", "-c", command]
                res = await sb.exec(argv, timeout_s=30)
            finally:
                await sb.destroy()
            code = None if res.timed_out else res.exit_code
            return code, res.stdout.decode(errors="replace"), res.stderr.decode(errors="replace")

    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # callable with or without a running event loop
        return pool.submit(asyncio.run, go()).result()


class CommandAgent(AgentAdapter):
    kind = "command"

    def __init__(self, config: dict[str, Any] | None = None, *, source: Path | None = None):
        super().__init__(config)
        try:
            self.spec = CommandAgentSpec.model_validate(self.config)
        except ValidationError as e:
            where = str(source) if source else "command agent config"
            first = e.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise AgentUnavailable(f"{where}: {loc}: {first['msg']} (fix: see `assay agents --help` for the command agent format)") from None
        for t in _templates(self.spec):
            import re

            for name in re.findall(r"\{([a-z_]+)\}", t):
                if name not in PLACEHOLDERS:
                    raise AgentUnavailable(f"{source or 'command agent'}: unknown placeholder {{{name}}}; known: {sorted(PLACEHOLDERS)}")
        self.name = self.spec.name
        self.needs_gateway = self.spec.needs_gateway

    def _argv0(self) -> str:
        cmd = self.spec.command
        return cmd.split()[0] if isinstance(cmd, str) else cmd[0]

    def info(self) -> AgentInfo:
        exe = self._argv0()
        if "{" not in exe and not Path(exe).is_absolute() and shutil.which(exe) is None:
            return AgentInfo(self.name, self.kind, None, usable=False, detail=f"executable {exe!r} not found on PATH")
        if Path(exe).is_absolute() and not Path(exe).exists():
            return AgentInfo(self.name, self.kind, None, usable=False, detail=f"executable {exe!r} does not exist")
        version = self.spec.version
        if version is None and self.spec.version_command is not None:
            try:
                code, out, err = sandboxed_version(self.spec.version_command, [Path(m) for m in self.spec.mounts])
            except Exception as e:  # noqa: BLE001 - a sandbox that cannot start makes the agent unusable, not the run crash
                return AgentInfo(self.name, self.kind, None, usable=False, detail=f"version command failed: {e}")
            if code != 0:
                return AgentInfo(self.name, self.kind, None, usable=False,
                                 detail=f"version command exited {code}: {err.strip()[:200]}")
            lines = (out or err).strip().splitlines()
            if not lines:
                return AgentInfo(self.name, self.kind, None, usable=False, detail="version command printed nothing")
            version = lines[0][:200]
        return AgentInfo(self.name, self.kind, version, config=self.spec.model_dump())

    def unsupported_reason(self, task: LoadedTask) -> str | None:
        if self.spec.tools is None:
            return None
        missing = sorted(set(task.spec.tools) - set(self.spec.tools))
        return f"unsupported: tools {missing} not offered by {self.name}" if missing else None

    def mounts(self, task: LoadedTask) -> list[Mount]:
        return [Mount(Path(m), m) for m in self.spec.mounts]

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        values = {
            "prompt": ctx.prompt, "prompt_file": f"{ctx.home_inside}/prompt.md", "workspace": ctx.sandbox.workspace_path,
            "endpoint": ctx.gateway_url or "", "api_key": ctx.gateway_key or "", "model": ctx.model or "",
            "home": ctx.home_inside, "task_id": ctx.task.id,
        }
        if ctx.agent_run == 1:  # a restart after a process fault writes nothing into the home the agent has
            (ctx.home / "prompt.md").write_text(ctx.prompt)  # been in: the first run's files stay
            self._write_files(ctx, values)
        if isinstance(self.spec.command, str):
            argv = ["/bin/sh", "-c", render(self.spec.command, values)]
        else:
            argv = [render(a, values) for a in self.spec.command]
        env = {**ctx.env, "HOME": ctx.home_inside, **{k: render(v, values) for k, v in self.spec.env.items()}}
        stdin = ctx.prompt.encode() if self.spec.prompt_via == "stdin" else None
        res = await ctx.sandbox.exec(argv, env=env, timeout_s=ctx.timeout_s, stdin=stdin)
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=res.stdout, stderr=res.stderr,
                            final_output=res.stdout.decode(errors="replace")[-4000:], limits_exceeded=res.limits_exceeded)

    def _write_files(self, ctx: AgentContext, values: dict[str, str]) -> None:
        for rel, content in self.spec.files.items():
            dest = (ctx.home / render(rel, values)).resolve()
            if not dest.is_relative_to(ctx.home.resolve()):
                raise AgentUnavailable(f"{self.name}: config file {rel!r} would be written outside the agent home")
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(render(content, values))
