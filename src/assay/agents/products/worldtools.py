"""World tools for product agents: listed from the in-process tool contract, disclosed in the
prompt, reached through the ``assay-tool`` shim on the agent's PATH.

A real model only uses tools it knows of. Product agents cannot be given extra native tools,
so a short, fixed note is appended to the task prompt naming each world tool the task allows,
its description and a summary of its JSON Schema, and how to call it. The note is generated
from the world tool contract the harness wires in (what ``GET /tools`` will list) and
recorded verbatim in the trace, so a report discloses exactly what the agent was told.
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any

from assay.harness.evidence import SHIM_COMMAND

SHIM = SHIM_COMMAND
#: fixed text of the note; ``{tools}`` is one line per tool, ``{shell_note}`` a sentence or nothing
NOTE = """\
## Tools of the systems in this task

The systems this task is about are reached only through the `{shim}` command in your shell.
Call a tool as:

    {shim} TOOL_NAME --json '{{"argument": "value"}}'

It prints the result as JSON. Exit status 0: the call succeeded; 1: the system or its policy
refused it (the output says why); 2: bad usage. `{shim} list` prints every tool with its full
JSON Schema.{shell_note}

Tools:
{tools}
"""
SHELL_NOTE = "\nThe shell is offered in this task only to run `{shim}`."


def _type_of(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return "one of " + ", ".join(str(v) for v in prop["enum"])
    t = prop.get("type", "any")
    if t == "array":
        return f"array of {_type_of(prop.get('items') or {})}"
    return "/".join(t) if isinstance(t, list) else str(t)


def schema_summary(schema: dict[str, Any]) -> str:
    """``date (string, YYYY-MM-DD, required), amount (number, required)``: one line per schema."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if not props:
        return "no arguments"
    parts = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        bits = [_type_of(prop)]
        if prop.get("description"):
            bits.append(str(prop["description"]))
        if name in required:
            bits.append("required")
        parts.append(f"{name} ({', '.join(bits)})")
    return ", ".join(parts)


def disclosure(tools: list[dict[str, Any]], shell_for_shim: bool) -> str:
    """The note appended to the prompt (empty when the task has no world tools)."""
    if not tools:
        return ""
    lines = [f"- {t['name']}: {t.get('description', '').strip()} Arguments: {schema_summary(t.get('input_schema') or {})}."
             for t in tools]
    return NOTE.format(shim=SHIM, tools="\n".join(lines),
                       shell_note=SHELL_NOTE.format(shim=SHIM) if shell_for_shim else "")


def shim_path(env: dict[str, str], path: str) -> str:
    """``PATH`` with the shim's directory (from ``ASSAY_TOOL``) first, when a world session set one."""
    tool = env.get("ASSAY_TOOL")
    if not tool:
        return path
    return f"{posixpath.dirname(tool)}:{path}"


def settle_shim(home: Path, env: dict[str, str]) -> list[str]:
    """Make ``assay-tool`` work in the agent's shell whatever the agent does to its environment;
    returns the files written (under ``home``, the per-attempt home on the host).

    * ``bin/assay-tool.json``: the tool URL and per-attempt key, read by the shim when the
      agent's shell scrubbed key-like names (DSH drops every ``*KEY*`` variable). The key grants
      only this attempt's world tools, which the agent is meant to have; it is redacted from
      evidence like the environment copy.
    * ``.profile``: puts the shim's directory back on PATH in login shells, which reset PATH
      from ``/etc/profile`` (Hermes runs its terminal through ``bash -l``).
    """
    tool, url, key = env.get("ASSAY_TOOL"), env.get("ASSAY_TOOLS_URL"), env.get("ASSAY_TOOLS_KEY")
    if not tool or not url or not key:
        return []
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    settings = bin_dir / "assay-tool.json"
    settings.write_text(json.dumps({"url": url, "key": key}))
    os.chmod(settings, 0o600)
    profile = home / ".profile"
    line = f'PATH="{posixpath.dirname(tool)}:$PATH"; export PATH\n'
    profile.write_text((profile.read_text() if profile.exists() else "") + line)
    return [str(settings.relative_to(home)), str(profile.relative_to(home))]
