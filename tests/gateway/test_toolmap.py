"""Neutral tool calls rendered onto each real agent's tool names and argument schemas."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest

from assay.gateway.neutral import ToolDef
from assay.gateway.toolmap import render_call, shell_fallback, shim_command

S = {"type": "string"}
PI = [ToolDef("read", parameters={"properties": {"path": S}}), ToolDef("bash", parameters={"properties": {"command": S}}),
      ToolDef("edit", parameters={"properties": {"path": S, "edits": {"type": "array", "items": {
          "properties": {"oldText": S, "newText": S}}}}}),
      ToolDef("write", parameters={"properties": {"path": S, "content": S}})]
HERMES = [ToolDef("terminal", parameters={"properties": {"command": S}}),
          ToolDef("read_file", parameters={"properties": {"path": S}}),
          ToolDef("patch", parameters={"properties": {"path": S, "old_string": S, "new_string": S}})]
OPENCLAW = [ToolDef("exec"), ToolDef("ls", parameters={"properties": {"path": S}})]
CLAUDE_LIKE = [ToolDef("Write", parameters={"properties": {"file_path": S, "content": S}})]


@pytest.mark.parametrize("offered,neutral,args,expected", [
    (PI, "shell", {"command": "ls"}, ("bash", {"command": "ls"})),
    (PI, "edit", {"path": "a", "old": "x", "new": "y"}, ("edit", {"path": "a", "edits": [{"oldText": "x", "newText": "y"}]})),
    (HERMES, "shell", {"command": "ls"}, ("terminal", {"command": "ls"})),
    (HERMES, "edit", {"path": "a", "old": "x", "new": "y"}, ("patch", {"path": "a", "old_string": "x", "new_string": "y"})),
    (HERMES, "read", {"path": "a"}, ("read_file", {"path": "a"})),
    (OPENCLAW, "shell", {"command": "ls"}, ("exec", {"command": "ls"})),
    (OPENCLAW, "list", {"path": "."}, ("ls", {"path": "."})),
    (CLAUDE_LIKE, "write", {"path": "a", "content": "c"}, ("Write", {"file_path": "a", "content": "c"})),
])
def test_aliases_and_argument_renaming(offered, neutral, args, expected) -> None:
    assert render_call(neutral, args, offered) == expected


@pytest.mark.parametrize("name", ["ledger__record_entry", "mcp__ledger__record_entry", "ledger_record_entry"])
def test_world_tool_names(name: str) -> None:
    assert render_call("ledger.record_entry", {"amount": 1}, [ToolDef("bash"), ToolDef(name)]) == (name, {"amount": 1})


#: the world server's tools as each product agent's MCP client names them (server "assay")
MCP_NAMED = {
    "pi/hermes": ["mcp__assay__ledger_list_entries", "mcp__assay__ledger_record_entry", "mcp__assay__user_refuse"],
    "openclaw": ["assay__ledger-list_entries", "assay__ledger-record_entry", "assay__user-refuse"],
    # DSH appends a 12-hex identity hash when it renames a tool (here: the dot)
    "dsh": ["mcp__assay__ledger_list_entries_b3ea2d69d73b", "mcp__assay__ledger_record_entry_c2b566da174e",
            "mcp__assay__user_refuse_ef3a01263abb"],
}


@pytest.mark.parametrize("agent", sorted(MCP_NAMED))
def test_world_calls_find_each_agents_mcp_tool(agent: str) -> None:
    names = MCP_NAMED[agent]
    offered = [ToolDef("bash", parameters={"properties": {"command": S}}), *(ToolDef(n) for n in names)]
    args = {"date": "2026-03-14", "amount": 186}
    assert render_call("ledger.record_entry", args, offered) == (names[1], args)
    assert render_call("ledger.list_entries", {}, offered) == (names[0], {})
    assert render_call("user.refuse", {"reason_code": "x"}, offered) == (names[2], {"reason_code": "x"})
    # a world tool the agent was not given over MCP is not allowed, and never goes to the shim
    assert render_call("outbox.send_email", {"to": "a"}, offered) is None


def test_a_rename_hash_is_stripped_only_from_mcp_names() -> None:
    from assay.gateway.toolmap import tool_key

    assert tool_key("mcp__assay__ledger_record_entry_c2b566da174e") == "mcp_assay_ledger_record_entry"
    assert tool_key("build_0123456789ab") == "build_0123456789ab"  # not an MCP name: kept whole
    assert tool_key("mcp__assay__ledger_record_entry_c2b566") == "mcp_assay_ledger_record_entry_c2b566"


def test_nothing_fits() -> None:
    assert render_call("write", {"path": "a", "content": "b"}, [ToolDef("read")]) is None
    assert render_call("ledger.record_entry", {}, [ToolDef("read")]) is None  # no native world tool, no shell


def test_world_call_goes_to_the_shim_on_the_agents_shell() -> None:
    args = {"merchant": "Harbor Dumpling House", "amount": 186, "note": "it's \"fine\" $HOME 记账"}
    for offered, tool in ((PI, "bash"), (HERMES, "terminal"), (OPENCLAW, "exec")):
        name, a = render_call("ledger.record_entry", args, offered)
        assert name == tool and set(a) == {"command"}
        assert a["command"] == shim_command("ledger.record_entry", args)
        argv = shlex.split(a["command"])
        assert argv[:3] == ["assay-tool", "ledger.record_entry", "--json"] and json.loads(argv[3]) == args


def test_agent_with_native_world_tools_is_never_rerouted_to_the_shim() -> None:
    """The reference agent offers world tools natively: one it does not offer is not allowed."""
    offered = [ToolDef("shell", parameters={"properties": {"command": S}}), ToolDef("ledger__list_entries")]
    assert render_call("outbox.send_email", {"to": "x"}, offered) is None
    assert render_call("ledger.list_entries", {}, offered) == ("ledger__list_entries", {})


def test_shim_call_fills_required_shell_arguments() -> None:
    dsh_bash = ToolDef("bash", parameters={"type": "object", "required": ["command", "description"],
                                           "properties": {"command": S, "description": S}})
    name, args = render_call("user.refuse", {"message": "no", "reason_code": "x"}, [dsh_bash])
    assert name == "bash" and args["description"] == "scripted user.refuse step"
    assert args["command"].startswith("assay-tool user.refuse --json ")


async def test_rendered_shim_command_lands_in_a_real_world(tmp_path: Path) -> None:
    """The command line the scripted model puts on a shell really reaches the world, arguments intact."""
    from assay.trace.events import EventKind, Source
    from assay.worlds.service import WorldService
    from tests.worlds.conftest import events, make_handle, make_task

    svc = WorldService()
    await svc.start()
    try:
        handle = make_handle(tmp_path, make_task(tmp_path))
        sess = await svc.open(handle)
        url = f"http://127.0.0.1:{sess.endpoints[0].port}"
        home = str(handle.scratch / "home")
        env = {k: v.replace("{endpoint:tools}", url).replace("{home}", home) for k, v in sess.env.items()}
        entry = {"date": "2026-03-14", "amount": 186, "currency": "CNY", "category": "dining",
                 "merchant": "Harbor \"Dumpling\" House", "note": "it's $HOME; `x` 记账"}
        _, a = render_call("ledger.record_entry", entry, OPENCLAW[:1])
        proc = subprocess.run(["/bin/sh", "-c", a["command"]], capture_output=True, text=True, timeout=60,
                              env={"PATH": f"{home}/bin:/usr/bin:/bin", **env})
        assert proc.returncode == 0, proc.stderr
        _, bad = render_call("ledger.record_entry", {**entry, "category": "casino"}, OPENCLAW[:1])
        proc = subprocess.run(["/bin/sh", "-c", bad["command"]], capture_output=True, text=True, timeout=60,
                              env={"PATH": f"{home}/bin:/usr/bin:/bin", **env})
        assert proc.returncode == 1 and "casino" in proc.stdout  # refused by the world: exit 1, reason printed
        report = await sess.close()
    finally:
        await svc.stop()
    added = report.verifier_extra.worlds["ledger"]["diff"]["entries"]["added"]
    [row] = added.values()
    assert {k: row[k] for k in entry} == {**entry, "amount": 186.0}
    calls = [e for e in events(handle) if e.kind == EventKind.tool_call and e.source == Source.world]
    assert [c.data["channel"] for c in calls] == ["shim", "shim"]
    assert calls[0].data["arguments"] == entry


def test_shell_fallbacks_really_work(tmp_path: Path) -> None:
    """An agent with only a shell still gets file operations done, byte for byte."""
    def sh(neutral: str, **args: str) -> subprocess.CompletedProcess:
        name, a = render_call(neutral, args, OPENCLAW[:1])
        assert name == "exec"
        return subprocess.run(["/bin/sh", "-c", a["command"]], cwd=tmp_path, capture_output=True, text=True)

    content = "line 1\nit's $HOME `x`\n\nno newline at end"
    assert sh("write", path="sub/f.txt", content=content).returncode == 0
    assert (tmp_path / "sub/f.txt").read_text() == content
    assert sh("read", path="sub/f.txt").stdout == content
    assert sh("edit", path="sub/f.txt", old="`x`", new="y").returncode == 0
    assert "it's $HOME y" in (tmp_path / "sub/f.txt").read_text()
    assert sh("edit", path="sub/f.txt", old="absent", new="y").returncode != 0
    assert "f.txt" in sh("list", path="sub").stdout
    assert shell_fallback("shell", {}) is None


def test_required_arguments_the_script_does_not_know_are_filled() -> None:
    dsh_bash = ToolDef("bash", parameters={"type": "object", "required": ["command", "description", "timeout", "bg"],
                                           "properties": {"command": S, "description": S,
                                                          "timeout": {"type": "integer", "default": 120},
                                                          "bg": {"type": "boolean"}}})
    name, args = render_call("shell", {"command": "ls"}, [dsh_bash])
    assert name == "bash"
    assert args == {"command": "ls", "description": "scripted shell step", "timeout": 120, "bg": False}
    name, args = render_call("read", {"path": "a.txt"}, [dsh_bash])  # shell fallback is filled too
    assert args["command"] == "cat a.txt" and args["description"] == "scripted read step"
