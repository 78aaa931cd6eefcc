"""Rendering a neutral tool call onto the tools the requesting agent actually offered.

A scripted turn says ``shell {command}``; Pi offers ``bash``, OpenClaw ``exec``, Hermes
``terminal``. The alias table picks the agent's own tool, and argument names are renamed to
what that tool's JSON Schema declares (``path`` → ``file_path``, ``old``/``new`` → Pi's
``edits[{oldText,newText}]``...). When an agent offers no file tool but a shell, file
operations fall back to shell commands, so one script drives every agent. Likewise a world
call (``ledger.record_entry``) goes to the agent's own tool for it when the agent offers world
tools natively (the reference agent, MCP), and otherwise becomes an ``assay-tool`` command line
on its shell: the shim the world service installs for agents that only have a shell.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from assay.gateway.neutral import ToolDef
from assay.harness.evidence import SHIM_COMMAND

#: neutral tool name -> the names agents give the same tool, in order of preference
ALIASES: dict[str, tuple[str, ...]] = {
    "shell": ("shell", "bash", "exec", "terminal", "run_shell_command", "execute_command", "run_command", "shell_exec"),
    "read": ("read", "read_file", "view", "cat", "file_read"),
    "write": ("write", "write_file", "create_file", "file_write"),
    "edit": ("edit", "edit_file", "str_replace", "patch", "replace", "file_edit"),
    "list": ("list", "ls", "list_dir", "list_directory", "list_files"),
}

#: neutral argument name -> names tools use for it, in order of preference
ARG_SYNONYMS: dict[str, tuple[str, ...]] = {
    "command": ("command", "cmd", "script"),
    "path": ("path", "file_path", "filePath", "filename", "file", "dir_path", "directory", "dir"),
    "content": ("content", "contents", "file_text", "text", "data"),
    "old": ("old", "old_string", "oldText", "old_str", "old_text", "search"),
    "new": ("new", "new_string", "newText", "new_str", "new_text", "replacement"),
}


def norm(name: str) -> str:
    """Lower case, every run of non-alphanumerics one underscore: ``ledger.record_entry`` ~ ``ledger__record_entry``."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


#: the identity hash an MCP client appends when it had to rename a tool (DSH: the dot of
#: ``ledger.record_entry`` gives ``mcp__assay__ledger_record_entry_c2b566da174e``)
_MCP_HASH = re.compile(r"^(mcp__.+)_[0-9a-f]{12}$")


def tool_key(name: str) -> str:
    """:func:`norm` of an offered tool's name, without an MCP client's rename hash."""
    m = _MCP_HASH.match(name)
    return norm(m.group(1) if m else name)


def _props(tool: ToolDef) -> dict[str, Any]:
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    return props if isinstance(props, dict) else {}


def _pick(neutral_arg: str, props: dict[str, Any]) -> str:
    for cand in ARG_SYNONYMS.get(neutral_arg, (neutral_arg,)):
        if cand in props:
            return cand
    return neutral_arg


def rename_arguments(tool: ToolDef, args: dict[str, Any]) -> dict[str, Any]:
    """Neutral arguments renamed onto ``tool``'s schema (unknown schemas keep neutral names)."""
    props = _props(tool)
    edits = props.get("edits")
    if isinstance(edits, dict) and edits.get("type") == "array" and "old" in args:
        item_props = (edits.get("items") or {}).get("properties") or {}
        out = {_pick(k, props): v for k, v in args.items() if k not in ("old", "new")}
        out["edits"] = [{_pick("old", item_props): args["old"], _pick("new", item_props): args.get("new", "")}]
        return out
    if not props:
        return dict(args)
    return {_pick(k, props): v for k, v in args.items()}


def find_tool(neutral: str, offered: list[ToolDef] | tuple[ToolDef, ...]) -> ToolDef | None:
    """The agent's tool for a neutral or world tool name, or None."""
    by_lower = {t.name.lower(): t for t in offered}
    if "." in neutral or neutral not in ALIASES:
        want = norm(neutral)
        exact = [t for t in offered if tool_key(t.name) == want]
        if exact:
            return exact[0]
        suffix = [t for t in offered if tool_key(t.name).endswith("_" + want)]
        if len(suffix) == 1:
            return suffix[0]
        short = norm(neutral.split(".")[-1])
        tail = [t for t in offered if tool_key(t.name) == short or tool_key(t.name).endswith("_" + short)]
        return tail[0] if len(tail) == 1 else None
    for alias in ALIASES[neutral]:
        if alias in by_lower:
            return by_lower[alias]
    return None


def shell_fallback(neutral: str, args: dict[str, Any]) -> str | None:
    """A shell command doing what a neutral file tool would, for agents that offer only a shell."""
    path = str(args.get("path", "."))
    if neutral == "read":
        return f"cat {shlex.quote(path)}"
    if neutral == "list":
        return f"ls -la {shlex.quote(path)}"
    if neutral == "write":
        q = shlex.quote(path)
        return f"mkdir -p \"$(dirname {q})\" && printf %s {shlex.quote(str(args.get('content', '')))} > {q}"
    if neutral == "edit":
        prog = ("import json,sys; a=json.loads(sys.argv[1]); p=a['path']; s=open(p).read(); "
                "assert a['old'] in s, 'old text not found'; open(p,'w').write(s.replace(a['old'], a['new'], 1))")
        payload = json.dumps({"path": path, "old": args.get("old", ""), "new": args.get("new", "")})
        return f"python3 -c {shlex.quote(prog)} {shlex.quote(payload)}"
    return None


def fill_required(tool: ToolDef, args: dict[str, Any], neutral: str) -> dict[str, Any]:
    """Give required arguments the script does not know a neutral value (DSH's ``bash`` requires a
    ``description``): the schema's default, else a plain note for strings, ``False`` for booleans."""
    required = tool.parameters.get("required") if isinstance(tool.parameters, dict) else None
    if not isinstance(required, list):
        return args
    props = _props(tool)
    out = dict(args)
    for name in required:
        if name in out or not isinstance(name, str):
            continue
        prop = props.get(name) if isinstance(props.get(name), dict) else {}
        if "default" in prop:
            out[name] = prop["default"]
        elif prop.get("type") == "string":
            out[name] = f"scripted {neutral} step"
        elif prop.get("type") == "boolean":
            out[name] = False
    return out


#: the world tools' command-line shim (assay.worlds.shim), on PATH inside the sandbox
SHIM = SHIM_COMMAND


def shim_command(name: str, args: dict[str, Any]) -> str:
    """The shell command line calling world tool ``name`` through the shim: ``assay-tool NAME --json '{...}'``."""
    return f"{SHIM} {shlex.quote(name)} --json {shlex.quote(json.dumps(args, ensure_ascii=False))}"


def offers_world_tools(offered: list[ToolDef] | tuple[ToolDef, ...]) -> bool:
    """Whether the agent exposes world tools natively (``ledger__record_entry``, ``mcp__ledger__...``):
    then a world tool it does not offer is not allowed, and is never rerouted to the shim."""
    return any("." in t.name or "__" in t.name for t in offered)


def render_call(neutral: str, args: dict[str, Any], offered: list[ToolDef] | tuple[ToolDef, ...]) -> tuple[str, dict[str, Any]] | None:
    """(agent tool name, agent arguments) for one neutral call, or None when nothing fits."""
    tool = find_tool(neutral, offered)
    if tool is not None:
        if "." in neutral or neutral not in ALIASES:
            return tool.name, dict(args)
        return tool.name, fill_required(tool, rename_arguments(tool, args), neutral)
    cmd = None
    if neutral in ("read", "write", "edit", "list"):
        cmd = shell_fallback(neutral, args)
    elif "." in neutral and not offers_world_tools(offered):
        cmd = shim_command(neutral, args)
    shell = find_tool("shell", offered) if cmd is not None else None
    if shell is not None and cmd is not None:
        return shell.name, fill_required(shell, rename_arguments(shell, {"command": cmd}), neutral)
    return None
