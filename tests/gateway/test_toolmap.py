"""Neutral tool calls rendered onto each real agent's tool names and argument schemas."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from assay.gateway.neutral import ToolDef
from assay.gateway.toolmap import render_call, shell_fallback

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


def test_nothing_fits() -> None:
    assert render_call("write", {"path": "a", "content": "b"}, [ToolDef("read")]) is None
    assert render_call("ledger.record_entry", {}, [ToolDef("bash")]) is None


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
