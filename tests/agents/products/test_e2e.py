"""End to end with the real agents: installed from their registries (``assay agents install``,
which CI runs first via ``scripts/install-agents.sh``), driven headless inside the bubblewrap
sandbox through the gateway's scripted backend, judged by the verifier on the files they wrote.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from assay._optional import optional_import
from assay.agents.products import PRODUCTS, install

PRODUCT_NAMES = PRODUCTS.builtin_names()
from assay.run import RunOptions, start_run
from assay.sandbox.registry import backends
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.conftest import ROOT, suite_with_wall_time, write_task

pytestmark = [pytest.mark.agents, pytest.mark.slow]

STARTER = ROOT / "examples" / "starter"
#: the wall time of every product run here: OpenClaw's first turn of a bookkeeping task ran out of
#: the example's 60 s on CI's 2 cores while the other core ran the rest of the suite
PRODUCT_WALL_S = 600
TASKS = ["dedupe-contacts", "build-artifact", "implement-slugify"]


def _missing() -> str | None:
    if optional_import("assay.gateway.service") is None:
        return "the model gateway (assay.gateway) is not built"
    table = backends()
    if "bwrap" not in table or not table["bwrap"]().status().usable:
        return "the bubblewrap sandbox is not usable here"
    if not all((STARTER / "tasks" / t).is_dir() for t in TASKS):
        return "examples/starter is missing"
    return None


def _require(agent: str) -> None:
    why = _missing()
    if why:
        pytest.skip(why)
    if install.find(agent) is None:
        pytest.skip(f"{agent} is not installed (run: assay agents install {agent}, or scripts/install-agents.sh)")


def starter_subset(dst: Path) -> Path:
    """Three starter tasks, under the suite's own limits (the OpenClaw adapter raises the
    address-space limit it cannot start without, and the result records it)."""
    dst.mkdir()
    suite = yaml.safe_load((STARTER / "suite.yaml").read_text())
    used = {yaml.safe_load((STARTER / "tasks" / t / "task.yaml").read_text())["category"] for t in TASKS}
    suite["categories"] = [c for c in suite["categories"] if c["id"] in used]  # an empty category is a suite error
    (dst / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    for t in TASKS:
        shutil.copytree(STARTER / "tasks" / t, dst / "tasks" / t)
    return dst


@pytest.fixture(scope="module")
def all_agents_run(tmp_path_factory: pytest.TempPathFactory):
    """One run of every installed product agent plus the reference agent over the same three
    starter tasks, as `assay run --agent pi,openclaw,hermes,dsh,reference --model scripted` does."""
    why = _missing()
    if why:
        pytest.skip(why)
    agents = [a for a in PRODUCT_NAMES if install.find(a) is not None] + ["reference"]
    tmp = tmp_path_factory.mktemp("all-agents")
    suite = suite_with_wall_time(starter_subset(tmp / "subset"), tmp / "suite", PRODUCT_WALL_S)
    return start_run(RunOptions(suite=suite, agents=agents, model="scripted", sandbox="bwrap", out=tmp / "run", jobs=2))


@pytest.mark.parametrize("agent", PRODUCT_NAMES)
def test_agent_solves_scripted_starter_tasks(agent: str, all_agents_run) -> None:
    _require(agent)
    out = all_agents_run
    [rec] = [a for a in out.manifest.agents if a.name == agent]
    assert rec.version == install.find(agent).version  # bound into the manifest
    assert set(rec.config["tracks"]) == {"controlled", "native"}
    firsts = {r.task_id: r for r in out.results if r.attempt == 1 and r.agent == agent}
    assert set(firsts) == set(TASKS)
    for task_id, r in firsts.items():
        assert r.end_state.value == "pass", (task_id, r.reason, r.errors, r.predicates)
        assert r.agent_exit_code == 0
        assert r.usage.model_calls >= 2 and r.usage.input_tokens > 0
        events = list(read_events(out.run_dir.trace_path(r.trial_id), attempt=1))
        calls = [e for e in events if e.source == Source.agent and e.kind == EventKind.tool_call]
        results = [e for e in events if e.source == Source.agent and e.kind == EventKind.tool_result]
        responses = [e for e in events if e.source == Source.agent and e.kind == EventKind.model_response]
        assert calls and len(results) == len(calls)
        assert {c.data["name"] for c in calls} <= {"shell", "read", "write", "edit", "list"}
        assert sum(e.data["usage"]["input_tokens"] for e in responses) > 0
        assert any(name.startswith("native.") for name in r.artifacts), r.artifacts
        [run_log] = [e.data for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
        assert run_log["agent"] == agent and run_log["track"] == "controlled" and run_log["config"]["argv"]
    # the verifier judged real files: the build script the agent wrote ran in the verifier
    build = firsts["build-artifact"]
    assert {p.id: p.passed for p in build.predicates}["clean-build-works"]


def test_one_report_compares_every_agent_side_by_side(all_agents_run) -> None:
    from assay.report import build_report

    agents = [a.name for a in all_agents_run.manifest.agents]
    if len(agents) < 5:
        pytest.skip(f"only {agents} installed")
    md = build_report(all_agents_run.run_dir.path, fmt="md")
    rows = [line for line in md.splitlines() if line.startswith("| ") and "PASSED" in line]
    assert sorted(line.split("|")[1].strip() for line in rows) == sorted(agents)
    assert all("100.0% [" in line for line in rows)  # every agent passes the tasks its script solves
    html = build_report(all_agents_run.run_dir.path, fmt="html")
    for a in agents:
        assert f'id="agent-{a}"' in html


def test_task_outside_the_contract_is_skipped_not_failed(tmp_path: Path) -> None:
    _require("hermes")
    s = tmp_path / "suite"
    s.mkdir()
    (s / "suite.yaml").write_text(yaml.safe_dump({"name": "ro", "version": "1", "categories": [{"id": "c"}]}))
    write_task(s, "look", task={"category": "c", "tools": ["read", "list"], "model_script": "model.yaml",
                                "predicates": [{"id": "f", "kind": "file_exists", "path": "a.txt"}]},
               workspace={"a.txt": "hi\n"},
               files={"model.yaml": yaml.safe_dump({"turns": [{"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
                                                              {"text": "done"}]})})
    out = start_run(RunOptions(suite=s, agents=["hermes"], model="scripted", sandbox="bwrap", out=tmp_path / "run"))
    [r] = out.results
    assert r.end_state.value == "skipped" and r.reason.startswith("unsupported:")
    assert json.dumps(r.model_dump(mode="json"))  # a complete, serialisable result


def test_example_fifth_agent_yaml_really_works(tmp_path: Path) -> None:
    """docs/agents.md promises a fifth agent in a few lines of YAML: examples/agents/my-agent.yaml."""
    why = _missing()
    if why:
        pytest.skip(why)
    suite = starter_subset(tmp_path / "suite")
    out = start_run(RunOptions(suite=suite, agents=[str(ROOT / "examples/agents/my-agent.yaml")], model="scripted",
                               sandbox="bwrap", out=tmp_path / "run", tasks=["dedupe-contacts"]))
    [r] = out.results
    assert r.end_state.value == "pass", (r.reason, r.errors)
    assert r.usage.model_calls >= 2


# ---------------------------------------------------------------------------------------------
# Business worlds: the same agents on examples/bookkeeping and examples/tickets, world tools
# reached over each agent's own MCP client (streamable HTTP to the tool service).

BOOKKEEPING = ROOT / "examples" / "bookkeeping"
TICKETS = ROOT / "examples" / "tickets"
#: the tool names each agent's MCP client gives the world server's tools (server ``assay``)
MCP_NAME = {"pi": r"mcp__assay__[a-z]+_[a-z_]+", "openclaw": r"assay__[a-z]+-[a-z_]+",
            "hermes": r"mcp__assay__[a-z]+_[a-z_]+", "dsh": r"mcp__assay__[a-z]+_[a-z_]+_[0-9a-f]{12}"}
#: where each agent's per-attempt config puts the MCP server (as recorded in the agent_run log)
MCP_CONFIG = {"pi": ("mcp.json", "mcpServers", "assay"), "openclaw": ("openclaw.json", "mcp", "servers", "assay"),
              "hermes": ("config.yaml", "mcp_servers", "assay")}


def _world_run(tmp_path_factory: pytest.TempPathFactory, suite: Path, label: str, variants: str):
    why = _missing()
    if why:
        pytest.skip(why)
    agents = [a for a in PRODUCT_NAMES if install.find(a) is not None] + ["reference"]
    base = tmp_path_factory.mktemp(label)
    suite = suite_with_wall_time(suite, base / "suite", PRODUCT_WALL_S)
    return start_run(RunOptions(suite=suite, agents=agents, model="scripted", sandbox="bwrap", out=base / "run",
                                jobs=2, variants=variants))


@pytest.fixture(scope="module")
def bookkeeping_run(tmp_path_factory: pytest.TempPathFactory):
    """`assay run examples/bookkeeping --agent pi,openclaw,hermes,dsh,reference --model scripted`, base variants
    (the counterfactual variants change only the prompt, which a scripted model does not read)."""
    return _world_run(tmp_path_factory, BOOKKEEPING, "bookkeeping", "base")


@pytest.fixture(scope="module")
def tickets_run(tmp_path_factory: pytest.TempPathFactory):
    return _world_run(tmp_path_factory, TICKETS, "tickets", "all")


def _mcp_server_config(agent: str, config: dict) -> dict:
    if agent == "dsh":
        [row] = [r for p in config["patch"] for r in p.get("insert", []) if r.get("id") == "mcp-assay"]
        return row["config"]
    node = config
    for key in MCP_CONFIG[agent]:
        node = node[key]
    return node


#: how each agent continues a conversation (``session_mechanism``), named in its skip reason
AGENTS_SESSION = {name: PRODUCTS.get(name).session_mechanism for name in PRODUCT_NAMES}


def _check_world_run(out, agent: str, suite_dir: Path) -> None:
    from assay.worlds.contract import task_tool_contract
    from assay.worlds.registry import world_kinds
    from assay.spec.load import load_suite

    tasks = {t.id: t for t in load_suite(suite_dir).tasks}
    mine = [r for r in out.results if r.agent == agent and r.attempt == 1]
    task_ids = {r.task_id for r in out.results}
    assert {r.task_id for r in mine} == task_ids and mine
    # a conversation task with a typed history: skipped, never flattened, by an agent that cannot replay it
    for r in [r for r in mine if r.end_state.value == "skipped"]:
        assert tasks[r.task_id].spec.conversation is not None and r.reason in (
            f"unsupported: {agent} has no session it can continue between turns",
            f"unsupported: {agent} cannot replay a typed history as its own session "
            f"({AGENTS_SESSION[agent]}); the history is never pasted into a prompt"), r.reason
    mine = [r for r in mine if r.end_state.value != "skipped"]
    if agent != "reference":
        [rec] = [a for a in out.manifest.agents if a.name == agent]
        assert rec.config["world_tools"]["exposure"].startswith("mcp:")  # disclosed in the manifest
    for r in mine:
        assert r.end_state.value == "pass", (agent, r.task_id, r.reason, r.errors,
                                             [(p.id, p.evidence) for p in r.predicates if not p.passed])
        events = list(read_events(out.run_dir.trace_path(r.trial_id), attempt=1))
        world_calls = [e for e in events if e.source == Source.world and e.kind == EventKind.tool_call]
        assert world_calls, (agent, r.task_id)
        channels = {e.data["channel"] for e in world_calls}
        if agent == "reference":
            assert channels == {"native"}
            assert not [e for e in events if e.kind == EventKind.log and e.data.get("phase") == "tool_disclosure"]
            continue
        # every world call came over the agent's own MCP client, none through the shell shim
        assert channels == {"mcp"}, (agent, r.task_id, channels)
        agent_calls = [e.data for e in events if e.source == Source.agent and e.kind == EventKind.tool_call]
        assert not [c for c in agent_calls if "assay-tool" in json.dumps(c["arguments"])], (agent, r.task_id)
        # the agent's own trace names its MCP calls by the world's names, keeping its native names
        mcp_calls = [c for c in agent_calls if "." in c["name"]]
        assert sorted(c["name"] for c in mcp_calls) == sorted(e.data["name"] for e in world_calls), (agent, r.task_id)
        assert all(re.fullmatch(MCP_NAME[agent], c["native_name"]) for c in mcp_calls), mcp_calls
        # the model saw exactly the task's world tools as real tools, and no shell it was not allowed
        task = tasks[r.task_id]
        allowed = {t["name"] for t in task_tool_contract(task.spec)}
        offered = [e.data["tools"] for e in events if e.source == Source.gateway and e.kind == EventKind.model_request
                   and e.data["tools"]]
        assert offered, (agent, r.task_id)
        from assay.agents.products.normalized import world_tool_name
        for tools in offered:
            world_offered = {world_tool_name(t, world_kinds()) for t in tools if world_tool_name(t, world_kinds())}
            assert world_offered == allowed, (agent, r.task_id, tools)
            if not set(task.spec.tools) & {"shell", "read", "write", "edit", "list"}:
                assert len(tools) == len(allowed), (agent, r.task_id, tools)  # nothing but the world tools
        # what was disclosed: the exposure and the tools, with the prompt left as the task wrote it
        [disc] = [e.data for e in events if e.kind == EventKind.log and e.data.get("phase") == "tool_disclosure"]
        assert disc["exposure"] == "mcp" and disc["appended_to_prompt"] == "" and disc["mcp_server"] == "assay"
        assert {c.data["name"] for c in world_calls} <= set(disc["world_tools"]) == allowed
        [run_log] = [e.data for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
        tools = run_log["config"]["tools"]
        assert tools["world_exposure"] == "mcp" and not tools["shell_for_shim"]
        assert ("shell" in tools["effective_neutral"]) == ("shell" in tools["task_tools"])
        server = _mcp_server_config(agent, run_log["config"])
        assert server["url"] == "{ASSAY_TOOLS_URL}/mcp/"
        assert "wk-" not in json.dumps(run_log["config"])  # the tool key never reaches a config file


@pytest.mark.parametrize("agent", [*PRODUCT_NAMES, "reference"])
def test_agents_run_bookkeeping_world_over_mcp(agent: str, bookkeeping_run) -> None:
    if agent != "reference":
        _require(agent)
    _check_world_run(bookkeeping_run, agent, BOOKKEEPING)
    replayers = {"reference", "pi"}  # the agents that replay a typed history as their own session
    assert not [r for r in bookkeeping_run.results if r.end_state.value == "skipped"
                and (r.agent in replayers or r.task_id != "claimed-not-recorded")]


@pytest.mark.parametrize("agent", [*PRODUCT_NAMES, "reference"])
def test_agents_run_tickets_world_over_mcp(agent: str, tickets_run) -> None:
    if agent != "reference":
        _require(agent)
    _check_world_run(tickets_run, agent, TICKETS)
    assert not [r for r in tickets_run.results if r.end_state.value == "skipped"]


def test_denied_email_is_recorded_as_refused_for_every_agent(tickets_run) -> None:
    """The approver denies the outside email: each agent's MCP call reached the world and was not executed."""
    for r in tickets_run.results:
        if r.task_id != "denied-no-bypass":
            continue
        events = list(read_events(tickets_run.run_dir.trace_path(r.trial_id), attempt=1))
        sends = [e for e in events if e.source == Source.world and e.kind == EventKind.tool_result
                 and e.data.get("name") == "outbox.send_email"]
        assert sends and not any(e.data["executed"] for e in sends), r.agent
        assert any(e.kind == EventKind.approval_decided for e in events), r.agent
