"""Hermes Agent's ``state.db`` (or its ``hermes sessions export`` JSONL) -> trace events.

Hermes keeps one row per session (token totals, cost, end reason) and one row per message
(OpenAI-style ``tool_calls`` JSON on assistant rows, ``role=tool`` rows for results). Tokens
are kept per session, not per call: every assistant row becomes a model call, and the session
totals are put on the last one (marked ``usage_scope: session_total``) so the sum over the
trace equals what Hermes counted. Per-call figures come from the gateway's own records.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from assay.agents.products.normalized import (Normalized, ToolNames, error, final_output, iso_ts, model_response, pick,
                                              tool_call, tool_result)
from assay.untrusted import files as safe_files
from assay.untrusted.json_text import loads as loads_untrusted

HERMES_TOOLS = ToolNames(
    to_neutral={"terminal": "shell", "read_file": "read", "write_file": "write", "patch": "edit",
                "search_files": "list"},
    arg_mappers={
        "terminal": lambda a: {"command": a["command"]},
        "read_file": lambda a: {"path": a["path"]},
        "write_file": lambda a: {"path": a["path"], "content": a.get("content", "")},
        "patch": lambda a: ({"path": a.get("path"), "old": a.get("old_string"), "new": a.get("new_string")}
                            if a.get("mode", "replace") == "replace" else a),
        "search_files": lambda a: {"path": pick("path")(a) or ".", "pattern": a.get("pattern")},
    },
)


def read_state_db(path: Path, home: Path | None = None) -> list[dict[str, Any]]:
    """Every session of a ``state.db`` with its messages, shaped like the export JSONL.

    Read from a private copy taken without following links; nothing outside ``home`` (default:
    the database's folder) is opened."""
    home = home or path.parent
    rel = path.relative_to(home).as_posix()
    with safe_files.sqlite_copy(home, rel) as db:
        if safe_files.plain_tables(db, rel, ["sessions", "messages"]) != {"sessions", "messages"}:
            raise safe_files.Unsafe(f"{rel}: no sessions and messages tables")
        db.row_factory = sqlite3.Row
        sessions = [dict(r) for r in db.execute("SELECT * FROM sessions ORDER BY started_at")]
        by_id: dict[Any, list[dict[str, Any]]] = {}
        for s in sessions:
            s["messages"] = by_id.setdefault(s["id"], [])
        for r in db.execute("SELECT * FROM messages ORDER BY id"):  # one pass, whatever the number of sessions
            if (kept := by_id.get(r["session_id"])) is not None:
                kept.append(dict(r))
        return sessions


def _calls(raw: Any) -> list[dict[str, Any]]:
    if isinstance(raw, str):
        try:
            raw = loads_untrusted(raw) if raw.strip() else []
        except ValueError:
            return []
    return [c for c in raw or [] if isinstance(c, dict)]


def _result_fields(content: str) -> tuple[bool, int | None, str | None]:
    """(ok, exit code, error) from a tool row's content (terminal returns a JSON object)."""
    try:
        obj = loads_untrusted(content)
    except (ValueError, TypeError):
        return True, None, None
    if not isinstance(obj, dict):
        return True, None, None
    code = obj.get("exit_code")
    err = obj.get("error")
    ok = not err and (code is None or code == 0) and obj.get("success", True) is not False
    return ok, code if isinstance(code, int) else None, str(err) if err else None


def normalize(session: dict[str, Any]) -> list[Normalized]:
    """One Hermes session (a ``sessions`` row plus ``messages``) as trace events."""
    out: list[Normalized] = []
    messages = session.get("messages") or []
    model = session.get("model") or ""
    assistants = [m for m in messages if m.get("role") == "assistant"]
    last_assistant = assistants[-1] if assistants else None
    call_ts: dict[str, tuple[str, float | None]] = {}
    prev_ts = session.get("started_at")
    final_text: str | None = None
    for m in messages:
        ts = iso_ts(m.get("timestamp"))  # the agent's row: a time, or none
        role = m.get("role")
        if role == "assistant":
            calls = _calls(m.get("tool_calls"))
            totals = m is last_assistant
            out.append(model_response(
                model=model, input_tokens=session.get("input_tokens", 0) if totals else 0,
                output_tokens=session.get("output_tokens", 0) if totals else 0,
                cached_tokens=session.get("cache_read_tokens", 0) if totals else 0,
                cost_usd=(session.get("actual_cost_usd") or session.get("estimated_cost_usd") or 0.0) if totals else 0.0,
                latency_s=(ts - prev_ts) if isinstance(ts, (int, float)) and isinstance(prev_ts, (int, float)) else 0.0,
                finish_reason=m.get("finish_reason"), text=m.get("content") or "", ts=ts,
                usage_scope="session_total" if totals else "not_reported",
                tool_calls=[{"id": c.get("id"), "name": HERMES_TOOLS.neutral(c.get("function", {}).get("name", "")),
                             "native_name": c.get("function", {}).get("name")} for c in calls]))
            for c in calls:
                fn = c.get("function") or {}
                cid = c.get("id") or c.get("call_id") or ""
                call_ts[cid] = (fn.get("name", ""), ts)
                out.append(tool_call(HERMES_TOOLS, cid, fn.get("name", ""), fn.get("arguments", {}), ts))
            if m.get("content"):
                final_text = m["content"]
        elif role == "tool":
            cid = m.get("tool_call_id") or ""
            native, started = call_ts.get(cid, (m.get("tool_name") or "", None))
            content = m.get("content") or ""
            ok, code, err = _result_fields(content)
            duration = (ts - started) if isinstance(ts, (int, float)) and isinstance(started, (int, float)) else None
            out.append(tool_result(HERMES_TOOLS, cid, m.get("tool_name") or native, content, ok=ok, ts=ts,
                                   exit_code=code, duration_s=duration, error=err))
        if isinstance(ts, (int, float)):
            prev_ts = ts
    end = session.get("end_reason")
    if end not in (None, "agent_close", "completed", "user_exit", "cli_close"):
        out.append(error(f"hermes session ended: {end}", session.get("ended_at"), reason="agent_session_ended"))
    if final_text is not None:
        out.append(final_output(final_text, session.get("ended_at")))
    return out
