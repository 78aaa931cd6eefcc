"""The draft task a candidate case proposes: prompt, tools, expected behaviour and predicates
suggested from what the agent did, with the user's correction applied when it is structured.

The suggestions are never trusted: the draft is marked ``DRAFT`` and a person must accept it
(``assay cases review --accept``). When the correction is free text, or the prompt could not be
read, the draft says so and cannot be accepted until a person has edited it.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from assay.cases.traces import ImportedTrace

PROMPT_PLACEHOLDER = "(no user message was found in the trace: write the instruction here)\n"
READ_PREFIXES = ("list", "get", "search", "lookup", "find", "read", "show", "query")
DRAFT_CATEGORY = "uncategorized"


def is_read(tool: str) -> bool:
    """A tool whose name says it only reads (``ledger.list_entries``): not an expected side effect."""
    leaf = tool.rsplit(".", 1)[-1].lower()
    return leaf.startswith(READ_PREFIXES)


def apply_correction(calls: list[dict[str, Any]], correction: Any) -> tuple[list[dict[str, Any]], bool]:
    """Calls with a structured correction applied: ``{"arguments": {...}}`` (optionally ``"tool"``)
    patches the first matching write call. Returns (calls, applied)."""
    if not isinstance(correction, dict) or not isinstance(correction.get("arguments"), dict):
        return calls, False
    out = copy.deepcopy(calls)
    tool = correction.get("tool")
    for c in out:
        if not is_read(c["name"]) and (tool is None or c["name"] == tool):
            c["arguments"] = {**(c["arguments"] if isinstance(c["arguments"], dict) else {}), **correction["arguments"]}
            return out, True
    return calls, False


def draft_task(trace: ImportedTrace, sources: list[str]) -> tuple[dict[str, Any], str, list[str]]:
    """(task.yaml data, prompt, what a person still has to do)."""
    todo: list[str] = []
    calls, applied = apply_correction(trace.tool_calls, trace.correction)
    if trace.correction is not None and not applied:
        todo.append("apply the user's correction to behaviour and predicates (it is free text)")
    if not trace.prompt:
        todo.append("write the prompt (none was found in the trace)")
    writes = [c for c in calls if not is_read(c["name"]) and c["name"]]
    tools = sorted({f"{c['name'].split('.', 1)[0]}.*" if "." in c["name"] else c["name"] for c in calls if c["name"]})
    task: dict[str, Any] = {
        "category": trace.category or DRAFT_CATEGORY,
        "description": f"DRAFT from production trace(s) {', '.join(sources)}: predicates are suggestions a person "
                       "must confirm.",
        "tools": tools or ["shell", "read", "write", "edit", "list"],
    }
    asks = [c for c in writes if c["name"] in ("user.ask_clarification", "user.refuse")]
    acts = [c for c in writes if c not in asks]
    if asks and not acts:
        code = asks[0]["arguments"].get("reason_code", "unspecified") if isinstance(asks[0]["arguments"], dict) else "unspecified"
        task["behaviour"] = {"expect": "clarify" if asks[0]["name"] == "user.ask_clarification" else "refuse",
                             "reason_code": code}
        task["predicates"] = [{"id": "behaviour", "kind": "behaviour"}, {"id": "worlds-untouched", "kind": "world_unchanged"}]
    elif acts:
        task["risk"] = "external_write"
        task["behaviour"] = {"expect": "act", "calls": [{"tool": c["name"], "args": c["arguments"]} for c in acts]}
        task["predicates"] = [{"id": "behaviour", "kind": "behaviour"}] + [
            {"id": f"call-{i + 1}", "kind": "tool_called", "tool": c["name"], "args": c["arguments"]}
            for i, c in enumerate(acts)]
    else:
        task["predicates"] = [{"id": "worlds-untouched", "kind": "world_unchanged"}]
        todo.append("state what the agent should have done (the trace shows no side effect)")
    return task, trace.prompt or PROMPT_PLACEHOLDER, todo


def task_yaml(task: dict[str, Any]) -> str:
    head = "# DRAFT candidate case: every predicate below is a suggestion; confirm or edit it, then\n" \
           "# `assay cases review CASES ID --accept --by NAME`.\n"
    return head + yaml.safe_dump(task, sort_keys=False, allow_unicode=True)
