"""Per-attempt configuration: a fresh home pointing each agent at the trial's gateway only."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from assay.agents.base import AgentContext
from assay.agents.products.common import KEY_ENV
from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.install import Installation
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from assay.errors import AdapterError
from assay.sandbox.base import Endpoint, SandboxSpec
from assay.sandbox.host import HostBackend
from assay.spec.load import load_suite
from assay.trace.writer import TraceWriter
from tests.conftest import write_suite, write_task

KEY = "sk-per-attempt-7f3a"


def make_ctx(tmp_path: Path, *, tools: list[str] | None = None, track: str = "controlled") -> AgentContext:
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}],
                             **({"tools": tools} if tools is not None else {})})
    task = load_suite(s).tasks[0]
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    sb = asyncio.run(HostBackend().create(SandboxSpec(workspace=ws, endpoints=(Endpoint("gateway", "127.0.0.1", 4321),))))
    return AgentContext(task=task, variant="base", prompt="Fix the bug in calc.py", sandbox=sb, workspace=ws,
                        home=home, home_inside="/assay/home", attempt_dir=tmp_path, trace=TraceWriter(tmp_path / "t.jsonl", "t"),
                        budget=task.spec.budget, timeout_s=60, gateway_url="http://10.0.0.1:4321", gateway_key=KEY,
                        model="scripted", track=track, tools=list(task.spec.tools))


def fake_install(tmp_path: Path, name: str) -> Installation:
    root = tmp_path / "install" / name
    return Installation(name, "1.0", root, root / "bin" / name, "test")


def no_key_in_files(home: Path) -> None:
    for p in home.rglob("*"):
        if p.is_file():
            assert KEY not in p.read_text(errors="replace"), p


def test_pi_config(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    launch = PiAgent().prepare(ctx, fake_install(tmp_path, "pi"))
    models = json.loads((ctx.home / "pi-agent/models.json").read_text())
    prov = models["providers"]["assay"]
    assert prov["baseUrl"] == "http://10.0.0.1:4321/v1" and prov["apiKey"] == "$" + KEY_ENV
    assert prov["models"][0]["id"] == "scripted"
    assert launch.env[KEY_ENV] == KEY and launch.env["PI_CODING_AGENT_DIR"] == "/assay/home/pi-agent"
    assert launch.env["HOME"] == "/assay/home" and launch.env["PI_OFFLINE"] == "1" and launch.env["PI_TELEMETRY"] == "0"
    argv = launch.argv
    assert argv[argv.index("--tools") + 1] == "bash,read,write,edit,ls"
    assert "--no-context-files" in argv and argv[argv.index("--model") + 1] == "assay/scripted"
    assert argv[-2:] == ["--", "Fix the bug in calc.py"]  # a prompt starting with '-' stays a prompt
    assert "<prompt>" in launch.config["argv"] and KEY not in json.dumps(launch.config)
    no_key_in_files(ctx.home)


def test_native_track_keeps_agent_defaults(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, track="native")
    argv = PiAgent().prepare(ctx, fake_install(tmp_path, "pi")).argv
    assert "--tools" not in argv and "--no-context-files" not in argv
    OpenClawAgent().prepare(ctx, fake_install(tmp_path, "openclaw"))
    assert "tools" not in json.loads((ctx.home / "openclaw.json").read_text())
    assert "-t" not in HermesAgent().prepare(ctx, fake_install(tmp_path, "hermes")).argv
    launch = DshAgent().prepare(ctx, fake_install(tmp_path, "dsh"))
    patch = yaml.safe_load((ctx.home / "assay.patch.yml").read_text())
    assert not any(p.get("disabled") for p in patch) and "DSH_PERMISSION_MODE" not in launch.env


def test_openclaw_config(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, tools=["read", "list"])
    launch = OpenClawAgent().prepare(ctx, fake_install(tmp_path, "openclaw"))
    cfg = json.loads((ctx.home / "openclaw.json").read_text())
    prov = cfg["models"]["providers"]["assay"]
    assert cfg["models"]["mode"] == "replace" and prov["baseUrl"] == "http://10.0.0.1:4321/v1"
    assert prov["apiKey"] == "${" + KEY_ENV + "}"
    assert cfg["tools"]["allow"] == ["read", "ls"] and cfg["tools"]["toolSearch"] is False
    assert "tool_call" in cfg["tools"]["deny"] and cfg["telemetry"]["enabled"] is False
    assert (ctx.home / "state").is_dir()  # agent exec never creates it
    assert (ctx.home / "prompt.md").read_text() == ctx.prompt
    assert launch.argv[launch.argv.index("--state-dir") + 1] == "/assay/home/state"
    assert launch.argv[launch.argv.index("--cwd") + 1] == ctx.sandbox.workspace_path
    no_key_in_files(ctx.home)


def test_hermes_config(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    launch = HermesAgent().prepare(ctx, fake_install(tmp_path, "hermes"))
    cfg = yaml.safe_load((ctx.home / "hermes/config.yaml").read_text())
    assert cfg["model"] == {"provider": "custom:assay", "default": "scripted"}
    assert cfg["providers"]["assay"]["base_url"] == "http://10.0.0.1:4321/v1"
    assert cfg["providers"]["assay"]["key_env"] == KEY_ENV and launch.env[KEY_ENV] == KEY
    assert launch.env["HERMES_HOME"] == "/assay/home/hermes"
    assert launch.argv[launch.argv.index("-t") + 1] == "terminal,file" and "--ignore-rules" in launch.argv
    no_key_in_files(ctx.home)


def test_dsh_config(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, tools=["shell"])
    launch = DshAgent().prepare(ctx, fake_install(tmp_path, "dsh"))
    patch = yaml.safe_load((ctx.home / "assay.patch.yml").read_text())
    prov = patch[0]["config"]["providers"]["assay"]
    assert prov["baseURL"] == "http://10.0.0.1:4321/v1" and prov["apiKeyEnv"] == KEY_ENV
    disabled = {p["id"] for p in patch if p.get("disabled")}
    assert "tool-bash" not in disabled and {"tool-fs", "tool-web", "tool-subagent", "session-title-llm"} <= disabled
    assert launch.env["DSH_TELEMETRY_DISABLED"] == "1" and launch.env["DSH_HOME"] == "/assay/home/dsh"
    no_key_in_files(ctx.home)


def test_unsupported_contract_never_runs_with_other_tools(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, tools=["read", "list"])
    assert HermesAgent().unsupported_reason(ctx.task).startswith("unsupported:")
    assert PiAgent().unsupported_reason(ctx.task) is None
    with pytest.raises(AdapterError):  # even if the runner asked, prepare refuses
        HermesAgent().prepare(ctx, fake_install(tmp_path, "hermes"))
