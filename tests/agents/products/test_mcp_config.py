"""World tools over MCP: what each product adapter writes into its per-attempt config, and when
it keeps the shell shim instead."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from assay.agents.base import AgentContext
from assay.agents.products import contract
from assay.agents.products.common import TOOLS_KEY_ENV, mcp_url
from assay.agents.products.dsh.adapter import DshAgent, dump_patch
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.install import Installation
from assay.agents.products.normalized import world_tool_name
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from assay.errors import AdapterError
from assay.harness.wiring import ToolsWiring, Wiring
from assay.sandbox.base import Endpoint, SandboxSpec
from assay.sandbox.host import HostBackend
from assay.spec.load import load_suite
from assay.trace.events import EventKind
from assay.trace.writer import TraceWriter, read_events
from assay.worlds.contract import world_tool_contract
from assay.worlds.registry import world_kinds
from tests.conftest import write_suite, write_task

TOOLS_KEY = "wk-0123456789abcdef-per-attempt"
TOOLS_URL = "http://10.0.0.1:5555"
LEDGER = {"categories": ["dining"], "entries": []}


class _JsLoader(yaml.SafeLoader):
    """Reads DSH's ``!!js`` scalars back as ``{"js": expression}``."""


_JsLoader.add_constructor("tag:yaml.org,2002:js", lambda loader, node: {"js": loader.construct_scalar(node)})


def world_ctx(tmp_path: Path, tools: list[str], *, env: dict[str, str] | None = None) -> AgentContext:
    s = write_suite(tmp_path / "suite")
    write_task(s, "w", task={"category": "code", "tools": tools, "worlds": {"ledger": LEDGER},
                             "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    task = load_suite(s).tasks[0]
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    sb = asyncio.run(HostBackend().create(SandboxSpec(workspace=ws, endpoints=(Endpoint("gateway", "127.0.0.1", 1),))))
    env = {"ASSAY_TOOLS_URL": TOOLS_URL, "ASSAY_TOOLS_KEY": TOOLS_KEY,
           "ASSAY_TOOL": "/assay/home/bin/assay-tool"} if env is None else env
    return AgentContext(task=task, variant="base", prompt="Book the dinner.", sandbox=sb, workspace=ws, home=home,
                        home_inside="/assay/home", attempt_dir=tmp_path, trace=TraceWriter(tmp_path / "t.jsonl", "t"),
                        budget=task.spec.budget, timeout_s=60, gateway_url="http://10.0.0.1:4321", gateway_key="sk-g",
                        model="scripted", tools=list(task.spec.tools), env=env,
                        wiring=Wiring(tools=ToolsWiring("tools", TOOLS_KEY, world_tool_contract(task.spec))))


def installed(tmp_path: Path, name: str, parts: frozenset[str] = frozenset({"mcp"})) -> Installation:
    root = tmp_path / "install" / name
    return Installation(name, "1.0", root, root / "bin" / name, "test", parts=parts)


def agent(cls, tmp_path: Path, **config):
    """An adapter whose installation is a fake one (with its MCP client unless told otherwise)."""
    parts = config.pop("_parts", frozenset({"mcp"}))
    a = cls(config)
    a.installation = lambda: installed(tmp_path, a.name, parts)  # type: ignore[method-assign]
    return a


def no_tool_key_in_files(home: Path) -> None:
    for p in home.rglob("*"):
        if p.is_file():
            assert TOOLS_KEY not in p.read_text(errors="replace"), p


def test_pi_gets_the_world_server_as_direct_mcp_tools_and_no_shell(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"])
    pi = agent(PiAgent, tmp_path)
    launch = pi.prepare(ctx, installed(tmp_path, "pi"))
    cfg = json.loads((ctx.home / "pi-agent/mcp.json").read_text())
    server = cfg["mcpServers"]["assay"]
    assert server["url"] == TOOLS_URL + "/mcp/" and server["exposure"] == "direct"
    assert server["headers"] == {"Authorization": "Bearer ${" + TOOLS_KEY_ENV + "}"}
    assert cfg["autoEnableCodemode"] is False
    argv = launch.argv
    assert "--no-mcp" not in argv and argv[argv.index("-e") + 1] == "builtin:mcp"
    assert argv[argv.index("--tools") + 1] == "mcp__assay__*"  # exactly the world server's tools: no bash
    assert launch.config["mcp.json"]["mcpServers"]["assay"]["url"] == "{ASSAY_TOOLS_URL}/mcp/"
    no_tool_key_in_files(ctx.home)
    # a task that also allows files gets them, still no shell
    ctx2 = world_ctx(tmp_path / "2", ["read", "ledger.*"])
    argv2 = pi.prepare(ctx2, installed(tmp_path, "pi")).argv
    assert argv2[argv2.index("--tools") + 1] == "read,mcp__assay__*"


def test_openclaw_gets_an_mcp_server_and_its_tools_allowed(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"])
    launch = agent(OpenClawAgent, tmp_path).prepare(ctx, installed(tmp_path, "openclaw"))
    cfg = json.loads((ctx.home / "openclaw.json").read_text())
    server = cfg["mcp"]["servers"]["assay"]
    assert server["url"] == TOOLS_URL + "/mcp/" and server["transport"] == "streamable-http"
    assert server["headers"]["Authorization"] == "Bearer ${" + TOOLS_KEY_ENV + "}"
    assert cfg["tools"]["allow"] == ["assay__*"] and "tool_call" in cfg["tools"]["deny"]
    assert launch.config["openclaw.json"]["mcp"]["servers"]["assay"]["url"] == "{ASSAY_TOOLS_URL}/mcp/"
    no_tool_key_in_files(ctx.home)


def test_hermes_gets_mcp_servers_and_the_server_as_a_toolset(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["shell", "ledger.*"])
    launch = agent(HermesAgent, tmp_path).prepare(ctx, installed(tmp_path, "hermes"))
    cfg = yaml.safe_load((ctx.home / "hermes/config.yaml").read_text())
    server = cfg["mcp_servers"]["assay"]
    assert server["url"] == TOOLS_URL + "/mcp/" and server["skip_preflight"] is True
    assert server["headers"]["Authorization"] == "Bearer ${" + TOOLS_KEY_ENV + "}"
    # hermes -z accepts an MCP server's name as a toolset (not the registry's "mcp-assay")
    assert launch.argv[launch.argv.index("-t") + 1] == "terminal,assay"
    no_tool_key_in_files(ctx.home)


def test_dsh_inserts_its_mcp_client_plugin_with_the_key_read_at_load(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"])
    launch = agent(DshAgent, tmp_path).prepare(ctx, installed(tmp_path, "dsh"))
    patch = yaml.load((ctx.home / "assay.patch.yml").read_text(), Loader=_JsLoader)  # noqa: S506 - our loader
    [row] = [r for p in patch for r in p.get("insert", [])]
    assert row["id"] == "mcp-assay" and row["name"] == "@deepseek-ai/dsh-mcp-client"
    c = row["config"]
    assert c["transport"] == "streamable-http" and c["url"] == TOOLS_URL + "/mcp/" and c["serverName"] == "assay"
    assert c["headers"]["Authorization"] == {"js": "'Bearer ' + process.env." + TOOLS_KEY_ENV}
    assert c["failOnStartupError"] is True  # a dead tool service fails loudly, not with tools silently missing
    disabled = {p["id"] for p in patch if p.get("disabled")}
    assert {"tool-bash", "mcp-resources"} <= disabled  # no shell, no resource tools outside the contract
    assert json.dumps(launch.config)  # the recorded patch is plain JSON
    no_tool_key_in_files(ctx.home)
    assert "Authorization: !!js" in (ctx.home / "assay.patch.yml").read_text()
    assert dump_patch([{"a": 1}]) == yaml.safe_dump([{"a": 1}], sort_keys=False)


def test_mcp_exposure_leaves_the_prompt_alone_and_says_so(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"])
    out = agent(PiAgent, tmp_path).disclose_world_tools(ctx)
    assert out.prompt == ctx.prompt
    [log] = [e.data for e in read_events(ctx.trace.path) if e.kind == EventKind.log]
    assert log["phase"] == "tool_disclosure" and log["exposure"] == "mcp" and log["appended_to_prompt"] == ""
    assert "ledger.record_entry" in log["world_tools"] and log["tools"]["world_exposure"] == "mcp"
    assert log["tools"]["shell_for_shim"] is False and log["tools"]["native_switches"] == []


def test_shim_stays_available_per_agent_config(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"])
    pi = agent(PiAgent, tmp_path, world_exposure="shim")
    launch = pi.prepare(ctx, installed(tmp_path, "pi"))
    assert not (ctx.home / "pi-agent/mcp.json").exists() and "--no-mcp" in launch.argv
    assert launch.argv[launch.argv.index("--tools") + 1] == "bash"
    out = pi.disclose_world_tools(ctx)
    assert "assay-tool TOOL_NAME --json" in out.prompt
    with pytest.raises(AdapterError):
        PiAgent({"world_exposure": "carrier-pigeon"})


def test_hermes_without_its_mcp_client_falls_back_to_the_shim(tmp_path: Path) -> None:
    """An install from before the mcp extra: Hermes would ignore mcp_servers, so the shim is used."""
    ctx = world_ctx(tmp_path, ["ledger.*"])
    hermes = agent(HermesAgent, tmp_path, _parts=frozenset())
    assert hermes.exposure == "shim"
    launch = hermes.prepare(ctx, installed(tmp_path, "hermes", frozenset()))
    assert "mcp_servers" not in yaml.safe_load((ctx.home / "hermes/config.yaml").read_text())
    assert launch.argv[launch.argv.index("-t") + 1] == "terminal"
    assert agent(HermesAgent, tmp_path).exposure == "mcp"


def test_no_tool_service_no_mcp_url(tmp_path: Path) -> None:
    ctx = world_ctx(tmp_path, ["ledger.*"], env={})
    with pytest.raises(AdapterError, match="ASSAY_TOOLS_URL"):
        mcp_url(ctx)
    with pytest.raises(AdapterError):
        agent(PiAgent, tmp_path).prepare(ctx, installed(tmp_path, "pi"))


def test_tasks_without_worlds_get_no_mcp_server(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "plain", task={"category": "code", "tools": ["shell"],
                                 "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    ctx = world_ctx(tmp_path / "w", ["ledger.*"])
    import dataclasses
    ctx = dataclasses.replace(ctx, task=load_suite(s).tasks[0], tools=["shell"], env={}, wiring=Wiring())
    launch = agent(PiAgent, tmp_path).prepare(ctx, installed(tmp_path, "pi"))
    assert "--no-mcp" in launch.argv and not (ctx.home / "pi-agent/mcp.json").exists()


@pytest.mark.parametrize("c", [PiAgent.contract, OpenClawAgent.contract, HermesAgent.contract, DshAgent.contract])
def test_world_tools_over_mcp_need_no_shell(c: contract.ToolContract) -> None:
    s = c.plan(["ledger.*"], ["ledger.record_entry", "user.refuse"], "mcp")
    assert s.why is None and s.switches == () and not s.shell_for_shim and s.neutral == frozenset()
    rec = s.record()
    assert rec["world_exposure"] == "mcp" and rec["world_tools"] == ["ledger.record_entry", "user.refuse"]
    assert c.plan(["shell", "ledger.*"], ["ledger.record_entry"], "mcp").neutral == {"shell"}
    with pytest.raises(ValueError):
        c.plan(["ledger.*"], [], "smoke-signals")


def test_an_agent_without_a_shell_runs_world_tasks_over_mcp() -> None:
    files_only = contract.ToolContract("files", (contract.ToolGroup(("read",), frozenset({"read"})),))
    s = files_only.plan(["read", "ledger.*"], ["ledger.list_entries"], "mcp")
    assert s.why is None and s.switches == ("read",)


@pytest.mark.parametrize("native,world", [
    ("mcp__assay__ledger_record_entry", "ledger.record_entry"),  # Pi, Hermes
    ("assay__ledger-record_entry", "ledger.record_entry"),  # OpenClaw
    ("mcp__assay__user_ask_clarification_68b87cc09f09", "user.ask_clarification"),  # DSH's rename hash
    ("mcp__assay__outbox_send_email", "outbox.send_email"),
    ("mcp__other__ledger_record_entry", None),  # another server's tool is not a world tool
    ("mcp__assay__weather_today", None),  # no such world
    ("bash", None),
])
def test_mcp_tool_names_map_back_to_world_tools(native: str, world: str | None) -> None:
    assert world_tool_name(native, world_kinds()) == world
