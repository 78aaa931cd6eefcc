"""Pi's session entries -> trace events. OpenClaw stores the same entry format (its transcript
is Pi's, session header version 4), so both adapters share this normalizer.

A Pi session is a tree (``id``/``parentId``); what the agent did is the branch ending at the
last entry. Each assistant message is one model call (usage, cost, latency, stop reason);
its ``toolCall`` blocks are tool calls; ``toolResult`` messages are their results.
"""

from __future__ import annotations

from typing import Any

from assay.agents.products.normalized import (Normalized, ToolNames, error, final_output, iso_ts, model_response,
                                              pick, text_of, tool_call, tool_result)


def _edit_args(a: dict[str, Any]) -> dict[str, Any]:
    path = pick("path", "file_path", "file")(a)
    edits = a.get("edits")
    if isinstance(edits, list) and edits:
        pairs = [{"old": e.get("oldText", e.get("old_string")), "new": e.get("newText", e.get("new_string"))}
                 for e in edits if isinstance(e, dict)]
        if len(pairs) == 1:
            return {"path": path, **pairs[0]}
        return {"path": path, "edits": pairs}
    return {"path": path, "old": pick("oldText", "old_string", "old")(a), "new": pick("newText", "new_string", "new")(a)}


COMMON_ARGS = {
    "read": lambda a: {"path": pick("path", "file_path")(a)},
    "write": lambda a: {"path": pick("path", "file_path")(a), "content": a.get("content", "")},
    "edit": _edit_args,
    "ls": lambda a: {"path": a.get("path") or "."},
}

PI_TOOLS = ToolNames(
    to_neutral={"bash": "shell", "read": "read", "write": "write", "edit": "edit", "ls": "list"},
    arg_mappers={"bash": lambda a: {"command": a["command"]}, **COMMON_ARGS},
)

OPENCLAW_TOOLS = ToolNames(
    to_neutral={"exec": "shell", "read": "read", "write": "write", "edit": "edit", "ls": "list"},
    arg_mappers={"exec": lambda a: {"command": pick("command", "cmd")(a)}, **COMMON_ARGS},
)


def active_branch(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries on the path from the root to the last entry (abandoned branches dropped).

    Entries without ids (older formats) keep their file order."""
    body = [e for e in entries if e.get("type") != "session"]
    if not body or any(not isinstance(e.get("id"), str) for e in body):
        return body
    by_id = {e["id"]: e for e in body}
    chain, seen = [], set()
    cur: dict[str, Any] | None = body[-1]
    while cur is not None and cur["id"] not in seen:
        seen.add(cur["id"])
        chain.append(cur)
        parent = cur.get("parentId")
        cur = by_id.get(parent) if isinstance(parent, str) else None
    chain.reverse()
    return chain


def session_messages(entries: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float | None]]:
    """(message, timestamp) for every ``message`` entry of the active branch."""
    out = []
    for e in active_branch(entries):
        if e.get("type") == "message" and isinstance(e.get("message"), dict):
            out.append((e["message"], iso_ts(e.get("timestamp")) or iso_ts(e["message"].get("timestamp"))))
    return out


def stdout_messages(events: list[dict[str, Any]]) -> list[tuple[dict[str, Any], float | None]]:
    """The same messages from Pi's ``--mode json`` stdout stream (``message_end`` records)."""
    return [(ev["message"], iso_ts(ev["message"].get("timestamp"))) for ev in events
            if ev.get("type") == "message_end" and isinstance(ev.get("message"), dict)]


def normalize_messages(messages: list[tuple[dict[str, Any], float | None]], names: ToolNames) -> list[Normalized]:
    """Model calls, tool calls, tool results, errors and the final answer, in order."""
    out: list[Normalized] = []
    last_text: str | None = None
    for msg, ts in messages:
        role = msg.get("role")
        if role == "assistant":
            content = msg.get("content") or []
            calls = [b for b in content if isinstance(b, dict) and b.get("type") == "toolCall"]
            usage = msg.get("usage") or {}
            cost = usage.get("cost") or {}
            text = text_of([b for b in content if isinstance(b, dict) and b.get("type") == "text"])
            stop = msg.get("stopReason")
            duration = msg.get("durationMs")
            out.append(model_response(
                model=msg.get("model", ""), input_tokens=usage.get("input", 0), output_tokens=usage.get("output", 0),
                cached_tokens=usage.get("cacheRead", 0), cost_usd=cost.get("total", 0.0) if isinstance(cost, dict) else 0.0,
                latency_s=(duration / 1000.0) if isinstance(duration, (int, float)) else 0.0, finish_reason=stop,
                text=text, ts=ts, provider=msg.get("provider"), response_id=msg.get("responseId"),
                tool_calls=[{"id": c.get("id"), "name": names.neutral(c.get("name", "")), "native_name": c.get("name")}
                            for c in calls]))
            if stop in ("error", "aborted"):
                out.append(error(msg.get("errorMessage") or f"assistant message ended with {stop}", ts,
                                 reason=f"agent_{stop}"))
            for c in calls:
                out.append(tool_call(names, c.get("id", ""), c.get("name", ""), c.get("arguments", {}), ts))
            if text:
                last_text = text
        elif role == "toolResult":
            details = msg.get("details") if isinstance(msg.get("details"), dict) else {}
            duration = msg.get("durationMs", details.get("durationMs"))
            is_error = bool(msg.get("isError"))
            out.append(tool_result(
                names, msg.get("toolCallId", ""), msg.get("toolName", ""), text_of(msg.get("content")), ok=not is_error,
                ts=ts, exit_code=details.get("exitCode"),
                duration_s=(duration / 1000.0) if isinstance(duration, (int, float)) else None))
    if last_text is not None:
        out.append(final_output(last_text, messages[-1][1] if messages else None))
    return out
