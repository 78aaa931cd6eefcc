"""DeepSeek Harness's session log -> trace events.

DSH writes an append-only, seq-numbered event log, zstd-compressed
(``$DSH_HOME/sessions/--<cwd>--/<id>/session.v4.jsonl.zstd``): ``assistant/message`` carries
the model's message and usage, ``tool/call`` and ``tool/result`` the tool use,
``job/settled`` the exit code of a shell job, ``turn/end`` the agent's own notion of how the
turn ended. Its ``--json`` stdout stream is a fallback with the same facts, coarser.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from assay.agents.products.normalized import (Normalized, ToolNames, error, final_output, iso_ts, model_response,
                                              read_jsonl, text_of, tool_call, tool_result)
from assay.untrusted import files as safe_files

DSH_TOOLS = ToolNames(
    to_neutral={"bash": "shell", "read": "read", "write": "write", "edit": "edit", "glob": "list"},
    arg_mappers={
        "bash": lambda a: {"command": a["command"]},
        "read": lambda a: {"path": a["file_path"]},
        "write": lambda a: {"path": a["file_path"], "content": a.get("content", "")},
        "edit": lambda a: {"path": a["file_path"], "old": a.get("old_string"), "new": a.get("new_string")},
        "glob": lambda a: {"path": a.get("path") or ".", "pattern": a.get("pattern")},
    },
)

_EXIT = re.compile(r"exit code:\s*(-?\d+)")


def find_session_logs(dsh_home: Path) -> list[Path]:
    """Session logs under a DSH home, compressed or not, oldest first; links are not followed."""
    logs = [*safe_files.glob(dsh_home, "sessions/*/*/session.v4.jsonl.zstd"),
            *safe_files.glob(dsh_home, "sessions/*/*/session.v4.jsonl")]
    return [dsh_home / rel for rel in sorted(logs, key=lambda rel: safe_files.mtime(dsh_home, rel))]


def read_session_log(path: Path, home: Path | None = None) -> list[dict[str, Any]]:
    """The log's events; nothing outside ``home`` (default: the log's folder) is opened, no link followed."""
    home = home or path.parent
    raw = safe_files.read_bytes(home, path.relative_to(home).as_posix())
    if path.suffix == ".zstd" or raw[:4] == b"\x28\xb5\x2f\xfd":
        raw = safe_files.inflate(raw, what=path.name)
    return read_jsonl(raw.decode("utf-8", errors="replace"))


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message.get("content") or [] if isinstance(b, dict) and b.get("type") == kind]


def normalize_session(events: list[dict[str, Any]]) -> list[Normalized]:
    """The session log (header line first, then ``{type, seq, time, data}`` events)."""
    body = sorted((e for e in events if e.get("type") != "session" and isinstance(e.get("seq"), int)),
                  key=lambda e: e["seq"])
    out: list[Normalized] = []
    call_started: dict[str, float] = {}
    exit_codes: dict[str, int] = {}
    step_started: float | None = None
    final_text: str | None = None
    for ev in body:  # exit codes come from jobs settled before the tool result is logged
        if ev["type"] == "job/settled":
            data = ev.get("data") or {}
            m = _EXIT.search(str(data.get("detail", "")))
            cid = (data.get("toolCall") or {}).get("callId")
            if m and cid:
                exit_codes[cid] = int(m.group(1))
    for ev in body:
        kind, data, ts = ev["type"], ev.get("data") or {}, iso_ts(ev.get("time"))
        if kind == "step/start":
            step_started = ts
        elif kind == "assistant/message":
            msg = data.get("message") or {}
            usage = data.get("usage") or {}
            src = msg.get("source") or {}
            calls = _blocks(msg, "tool-call")
            text = text_of(_blocks(msg, "text"))
            out.append(model_response(
                model=src.get("model", ""), input_tokens=usage.get("inputTokens", 0),
                output_tokens=usage.get("outputTokens", 0), cached_tokens=usage.get("cacheReadTokens", 0),
                latency_s=(ts - step_started) if ts is not None and step_started is not None else 0.0,
                finish_reason="tool_calls" if calls else "stop", text=text, ts=ts, provider=src.get("provider"),
                tool_calls=[{"id": c.get("id"), "name": DSH_TOOLS.neutral(c.get("name", "")),
                             "native_name": c.get("name")} for c in calls]))
            if text:
                final_text = text
        elif kind == "tool/call":
            cid = data.get("callId", "")
            if ts is not None:
                call_started[cid] = ts
            out.append(tool_call(DSH_TOOLS, cid, data.get("name", ""), data.get("arguments", {}), ts))
        elif kind == "tool/result":
            msg = data.get("message") or {}
            cid = msg.get("toolCallId", "")
            native = next((c.data.get("native_name") or "" for c in reversed(out)
                           if c.data.get("call_id") == cid and c.kind.value == "tool_call"), "")
            started = call_started.get(cid)
            out.append(tool_result(DSH_TOOLS, cid, native, text_of(msg.get("content")), ok=not msg.get("isError"),
                                   ts=ts, exit_code=exit_codes.get(cid),
                                   duration_s=(ts - started) if ts is not None and started is not None else None))
        elif kind == "turn/end":
            reason = (data.get("reason") or {}).get("kind")
            if reason != "completed":
                out.append(error(f"dsh turn ended: {reason}", ts, reason="agent_turn_end", detail=data.get("reason")))
    if final_text is not None:
        out.append(final_output(final_text, iso_ts(body[-1].get("time")) if body else None))
    return out


def normalize_stdout(events: list[dict[str, Any]]) -> list[Normalized]:
    """The headless ``--json`` stdout stream, when no session log could be read."""
    out: list[Normalized] = []
    names: dict[str, str] = {}
    final: str | None = None
    for ev in events:
        kind = ev.get("type")
        if kind == "status" and ev.get("phase") == "step_end" and isinstance(ev.get("usage"), dict):
            u = ev["usage"]
            out.append(model_response(model="", input_tokens=u.get("inputTokens", 0),
                                      output_tokens=u.get("outputTokens", 0)))
        elif kind == "tool_call":
            names[ev.get("callId", "")] = ev.get("tool", "")
            out.append(tool_call(DSH_TOOLS, ev.get("callId", ""), ev.get("tool", ""), ev.get("input", {}), None))
        elif kind == "tool_result":
            cid = ev.get("callId", "")
            result = ev.get("result")
            out.append(tool_result(DSH_TOOLS, cid, names.get(cid, ""), result if isinstance(result, str) else str(result),
                                   ok=ev.get("status") == "completed", ts=None))
        elif kind == "status" and ev.get("phase") == "turn_end":
            reason = (ev.get("reason") or {}).get("kind")
            if reason != "completed":
                out.append(error(f"dsh turn ended: {reason}", None, reason="agent_turn_end"))
        elif kind == "final":
            final = ev.get("text", "")
    if final is not None:
        out.append(final_output(final))
    return out
