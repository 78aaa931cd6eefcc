"""Replay a task's scripted model (``model.yaml``, shared contract 1) directly in a workspace.

This is the test double of "the reference agent driven by the gateway's scripted backend": it
executes the neutral tool calls of every assistant turn, in order, in the workspace, with the
same semantics the tool contract gives them, so a test can prove that each model script really
solves its task (the verifier, not this script, decides).

    python replay_model_script.py TASK_ID            # suite from $ASSAY_REPLAY_SUITE
    python replay_model_script.py --model FILE [--tools shell,read,...]

Semantics: ``shell`` runs ``/bin/sh -c COMMAND`` in the workspace; ``write`` writes the full
content (creating folders); ``edit`` replaces ``old`` with ``new`` and fails unless ``old``
occurs exactly once; ``read`` and ``list`` only read. Paths must stay inside the workspace.
A malformed script, a tool the task does not allow, or a failed edit exits non-zero.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

NEUTRAL_TOOLS = ("shell", "read", "write", "edit", "list")
DEFAULT_TOOLS = list(NEUTRAL_TOOLS)
SHELL_TIMEOUT_S = 60


class ScriptError(Exception):
    """The model script cannot be replayed as written."""


def load_turns(model_file: Path) -> list[dict[str, Any]]:
    """The assistant turns, checked against contract 1's shape."""
    data = yaml.safe_load(model_file.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("turns"), list) or not data["turns"]:
        raise ScriptError(f"{model_file}: expected a mapping with a non-empty 'turns' list")
    turns = data["turns"]
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict) or set(turn) - {"text", "tool_calls"}:
            raise ScriptError(f"{model_file}: turn {i} must have only 'text' and 'tool_calls'")
        calls = turn.get("tool_calls") or []
        last = i == len(turns) - 1
        if not calls and not last:
            raise ScriptError(f"{model_file}: turn {i} has no tool calls, so it ends the conversation early")
        if calls and last:
            raise ScriptError(f"{model_file}: the last turn must be a final text turn without tool calls")
        for call in calls:
            if not isinstance(call, dict) or not isinstance(call.get("name"), str) \
                    or not isinstance(call.get("arguments", {}), dict):
                raise ScriptError(f"{model_file}: turn {i}: each tool call needs a 'name' and an 'arguments' mapping")
    return turns


def _inside(ws: Path, rel: str) -> Path:
    p = Path(os.path.realpath(ws / rel))
    root = Path(os.path.realpath(ws))
    if p != root and not p.is_relative_to(root):
        raise ScriptError(f"path {rel!r} leaves the workspace")
    return p


def run_call(ws: Path, name: str, args: dict[str, Any]) -> str:
    """Execute one neutral tool call; returns what the tool would report back to the model."""
    if name == "shell":
        res = subprocess.run(["/bin/sh", "-c", args["command"]], cwd=ws, capture_output=True, text=True,
                             timeout=SHELL_TIMEOUT_S)
        return f"exit {res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
    if name == "read":
        return _inside(ws, args["path"]).read_text()
    if name == "list":
        return "\n".join(sorted(os.listdir(_inside(ws, args.get("path", ".")))))
    if name == "write":
        p = _inside(ws, args["path"])
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(args["content"])
        return f"wrote {len(args['content'])} characters"
    if name == "edit":
        p = _inside(ws, args["path"])
        text = p.read_text()
        n = text.count(args["old"])
        if n != 1:
            raise ScriptError(f"edit of {args['path']!r}: 'old' occurs {n} times, expected exactly once")
        p.write_text(text.replace(args["old"], args["new"], 1))
        return "edited"
    raise ScriptError(f"tool {name!r} is not a neutral tool this replayer executes")


def replay(model_file: Path, ws: Path, allowed: list[str]) -> str:
    """Play every turn; returns the final assistant text."""
    turns = load_turns(model_file)
    for i, turn in enumerate(turns):
        for call in turn.get("tool_calls") or []:
            if call["name"] not in allowed:
                raise ScriptError(f"turn {i}: tool {call['name']!r} is not allowed by the task ({allowed})")
            try:
                out = run_call(ws, call["name"], call.get("arguments") or {})
            except KeyError as e:
                raise ScriptError(f"turn {i}: tool {call['name']!r} is missing argument {e}") from None
            except OSError as e:
                out = f"error: {e}"
            print(f"[turn {i}] {call['name']}: {out.splitlines()[0] if out else ''}", file=sys.stderr)
    return str(turns[-1].get("text") or "")


def _task_files(task_id: str) -> tuple[Path, list[str]]:
    suite = os.environ.get("ASSAY_REPLAY_SUITE")
    if not suite:
        raise ScriptError("set ASSAY_REPLAY_SUITE to the suite folder (or pass --model)")
    task_dir = Path(suite) / "tasks" / task_id
    spec = yaml.safe_load((task_dir / "task.yaml").read_text()) or {}
    if not spec.get("model_script"):
        raise ScriptError(f"task {task_id!r} declares no model_script")
    return task_dir / spec["model_script"], list(spec.get("tools") or DEFAULT_TOOLS)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task_id", nargs="?")
    ap.add_argument("--model", type=Path, help="model.yaml to replay (instead of a task id)")
    ap.add_argument("--tools", default=",".join(DEFAULT_TOOLS), help="allowed tools with --model")
    ap.add_argument("--workspace", type=Path, default=Path.cwd())
    ns = ap.parse_args(argv)
    try:
        if ns.model is not None:
            model_file, allowed = ns.model, ns.tools.split(",")
        elif ns.task_id:
            model_file, allowed = _task_files(ns.task_id)
        else:
            raise ScriptError("pass a task id or --model")
        print(replay(model_file, ns.workspace, allowed))
    except (ScriptError, OSError, yaml.YAMLError, subprocess.TimeoutExpired) as e:
        print(f"replay failed: {e}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
