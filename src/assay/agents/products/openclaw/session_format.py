"""OpenClaw's SQLite session store -> trace events.

OpenClaw 2026.9 keeps no session JSONL: the transcript (Pi-format entries) is in
``transcript_events`` and the runtime trajectory (``tool.call``, ``model.completed``,
``session.ended`` ...) in ``trajectory_runtime_events`` of the per-agent database
``<state>/agents/<agent>/agent/openclaw-agent.sqlite``. Rows may be stored zstd-compressed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from assay.agents.products.normalized import Normalized, error, iso_ts
from assay.agents.products.pi.session_format import OPENCLAW_TOOLS, normalize_messages, session_messages
from assay.untrusted import files as safe_files
from assay.untrusted.json_text import loads as loads_untrusted


def _decode(raw: Any, packed: Any, budget: list[int]) -> dict[str, Any] | None:
    """One row's event; ``budget`` holds the bytes still allowed for the whole read (rows are
    small alone and could add up): past it, :class:`~safe_files.Unsafe`."""
    text = raw
    if text is None and packed is not None:
        text = safe_files.inflate(bytes(packed), max(budget[0], 0), "a transcript row")
    budget[0] -= len(text) if isinstance(text, (str, bytes, bytearray)) else 0
    if budget[0] < 0:
        raise safe_files.Unsafe(f"the transcript holds more than {safe_files.MAX_BYTES} bytes")
    if isinstance(text, (bytes, bytearray)):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        return None
    try:
        obj = loads_untrusted(text) if text else None
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def find_databases(state_dir: Path) -> list[Path]:
    """Every per-agent database under a state dir (normally one: agents/main); links are not followed."""
    return [state_dir / rel for rel in safe_files.glob(state_dir, "agents/*/agent/*.sqlite")]


def read_database(path: Path, home: Path | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(transcript entries, runtime events) of the newest session in one database, in seq order.

    Read from a private copy taken without following links, never from ``path`` itself; nothing
    outside ``home`` (default: the database's folder) is opened."""
    home = home or path.parent
    rel = path.relative_to(home).as_posix()
    budget = [safe_files.MAX_BYTES]
    with safe_files.sqlite_copy(home, rel) as db:
        tables = safe_files.plain_tables(db, rel, ["transcript_events", "trajectory_runtime_events"])
        transcript: list[dict[str, Any]] = []
        runtime: list[dict[str, Any]] = []
        session_id = None
        if "transcript_events" in tables:
            cols = _columns(db, "transcript_events")
            packed = "event_zstd" if "event_zstd" in cols else "NULL"
            rows = db.execute(f"SELECT session_id, seq, event_json, {packed} FROM transcript_events "
                              "ORDER BY rowid").fetchall()
            if rows:
                session_id = rows[-1][0]
            transcript = [e for sid, _, raw, z in sorted(rows, key=lambda r: (r[0] != session_id, r[1]))
                          if sid == session_id and (e := _decode(raw, z, budget)) is not None]
        if "trajectory_runtime_events" in tables:
            rows = db.execute("SELECT session_id, seq, event_json FROM trajectory_runtime_events ORDER BY seq").fetchall()
            runtime = [e for sid, _, raw in rows if session_id is None or sid == session_id
                       if (e := _decode(raw, None, budget)) is not None]
        return transcript, runtime


def normalize(transcript: list[dict[str, Any]], runtime: list[dict[str, Any]]) -> list[Normalized]:
    """Transcript messages as model/tool events, plus an error when the runtime says the run failed."""
    out = normalize_messages(session_messages(transcript), OPENCLAW_TOOLS)
    for ev in runtime:
        if ev.get("type") != "session.ended":
            continue
        data = ev.get("data") or {}
        flags = [k for k in ("aborted", "timedOut", "idleTimedOut", "timedOutByRunBudget") if data.get(k)]
        if data.get("status") not in (None, "success") or flags:
            out.append(error(f"openclaw session ended: status={data.get('status')} {' '.join(flags)}".strip(),
                             iso_ts(ev.get("ts")), reason="agent_session_ended", stop_reason=data.get("stopReason")))
    return out
