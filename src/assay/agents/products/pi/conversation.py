"""Pi's session file (JSONL, version 3) written from a typed history, and read back for its id.

The entries are Pi's own (``docs/session-format.md``): a ``session`` header, then ``message``
entries chained by ``id``/``parentId``; assistant tool calls are ``toolCall`` blocks answered by
``toolResult`` messages. Pi continues such a file with ``--session-id`` as if it had written it.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from assay.agents.products.normalized import read_jsonl
from assay.untrusted import files as safe_files
from assay.untrusted.json_text import loads as loads_untrusted

EPOCH_MS = 1767225600000  # 2026-01-01T00:00:00Z: seeded entries are older than any live one
#: the most of a session file read to learn its id: its first line (a header is far smaller)
HEAD_BYTES = 64 << 10
#: what a session id may look like to be handed back to Pi on its command line
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def _entry_id(i: int, sid: str) -> str:
    return hashlib.sha256(f"{sid}/{i}".encode()).hexdigest()[:8]


def _iso(ms: int) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _content(text: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}] if isinstance(text, str) and text else []


def seeded_session(sid: str, cwd: str, messages: list[dict[str, Any]], *, model: str, provider: str) -> str:
    """The chat ``messages`` as a Pi v3 session file for session ``sid`` in ``cwd``."""
    lines = [{"type": "session", "version": 3, "id": sid, "timestamp": _iso(EPOCH_MS), "cwd": cwd}]
    parent: str | None = None
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        ms = EPOCH_MS + 1000 * (i + 1)
        role = m.get("role")
        if role == "user":
            msg: dict[str, Any] = {"role": "user", "content": _content(m.get("content")), "timestamp": ms}
        elif role == "assistant":
            calls = m.get("tool_calls") or []
            blocks = _content(m.get("content"))
            for c in calls:
                fn = c["function"]
                names[c["id"]] = fn["name"]
                blocks.append({"type": "toolCall", "id": c["id"], "name": fn["name"],
                               "arguments": json.loads(fn.get("arguments") or "{}")})
            msg = {"role": "assistant", "content": blocks, "api": "openai-completions", "provider": provider,
                   "model": model, "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0,
                                                      "total": 0}},
                   "stopReason": "toolUse" if calls else "stop", "timestamp": ms}
        elif role == "tool":
            content = str(m.get("content") or "")
            msg = {"role": "toolResult", "toolCallId": m["tool_call_id"], "toolName": names.get(m["tool_call_id"], ""),
                   "content": _content(content), "isError": content.startswith("ERROR: "), "timestamp": ms}
        else:
            continue
        eid = _entry_id(i, sid)
        lines.append({"type": "message", "id": eid, "parentId": parent, "timestamp": _iso(ms), "message": msg})
        parent = eid
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def session_ids(home: Path, pattern: str) -> set[str]:
    """The ids in the headers of the session files under ``home`` (read without following links)."""
    return set(session_files_by_id(home, pattern))


def session_files_by_id(home: Path, pattern: str) -> dict[str, list[str]]:
    """Session id -> the files whose header carries it: a copied session file is a second file
    with the same id, and which of the two Pi then resumes is not certain."""
    out: dict[str, list[str]] = {}
    for rel in safe_files.glob(home, pattern):
        try:
            first = safe_files.read_head(home, rel, HEAD_BYTES)
        except OSError:
            continue
        head = read_jsonl(first.decode(errors="replace"))
        if head and head[0].get("type") == "session" and isinstance(head[0].get("id"), str):
            out.setdefault(head[0]["id"], []).append(str(rel))
    return out



def resumable(home: Path, pattern: str) -> tuple[str | None, str]:
    """The id of the one session a killed Pi left under ``home`` (``pattern``), or None and why
    not. The files are the agent's: a link or special file there refuses the resume, and only the
    first line of the one regular file is read, at most :data:`HEAD_BYTES`."""
    traps = safe_files.unsafe_entries(home, [pattern])
    if traps:
        return None, f"a link or special file where Pi keeps its sessions ({traps[0]['path']}): not followed"
    files = safe_files.glob(home, pattern)
    if len(files) != 1:
        return None, (f"{len(files)} session files: which one the killed run wrote is not certain" if files
                      else "the killed run left no session file")
    try:
        head = safe_files.read_head(home, files[0], HEAD_BYTES)
    except OSError as e:
        return None, f"{files[0]} cannot be read safely: {e}"
    if len(head) >= HEAD_BYTES:
        return None, f"{files[0]}: its first line is longer than {HEAD_BYTES} bytes"
    try:
        header = loads_untrusted(head)
    except ValueError:
        return None, f"{files[0]}: its first line is not JSON"
    sid = header.get("id") if isinstance(header, dict) and header.get("type") == "session" else None
    if not isinstance(sid, str) or not SESSION_ID.fullmatch(sid):
        return None, f"{files[0]}: no session header with a plain id"
    return sid, ""
