"""OpenClaw's own session in a conversation task.

``openclaw agent exec`` always starts a fresh session (its id is a random UUID it picks), so a
conversation runs every turn as the embedded agent ``openclaw agent --local --session-id <id>``,
which opens the session of that id in the state dir's SQLite store and appends to it (verified
with 2026.9.6: the second turn's request carries the first turn's messages). The config of a
conversation adds what ``agent exec`` would have merged in by itself (:func:`exec_defaults`).

A typed history goes in through OpenClaw's own import path for session history: its legacy
session files (``agents/main/sessions/sessions.json`` and the transcript as Pi-format JSONL
entries, :func:`legacy_store`) are written into the fresh state dir and imported into SQLite by
``openclaw doctor --session-sqlite import`` run in the sandbox before the first turn
(:data:`IMPORT_ARGS`), which archives the files it imported.

Between turns the store is the agent's and hostile: it is read from a private copy taken without
following links, and the conversation's session must be the only one in the agent's database,
holding the user messages of the turns before.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agents.base import SessionLost
from assay.agents.products.normalized import Normalized
from assay.agents.products.openclaw.session_format import _columns, _decode, normalize
from assay.agents.products.pi.session_format import active_branch
from assay.untrusted import files as safe_files

#: the default agent's database, relative to the agent home (``--state-dir`` is ``$HOME/state``)
AGENT_DB = "state/agents/main/agent/openclaw-agent.sqlite"
#: where OpenClaw's importer looks for the default agent's legacy session files
LEGACY_DIR = "state/agents/main/sessions"
#: OpenClaw's own importer of legacy session history into its SQLite store
IMPORT_ARGS = ["doctor", "--session-sqlite", "import", "--session-sqlite-agent", "main", "--json"]


def session_key(sid: str) -> str:
    """The key ``openclaw agent --session-id <sid>`` files its session under."""
    return f"agent:main:explicit:{sid}"


def legacy_store(sid: str, updated_ms: int) -> dict[str, Any]:
    """The legacy ``sessions.json`` naming the one session whose transcript is ``<sid>.jsonl``."""
    return {session_key(sid): {"sessionId": sid, "updatedAt": updated_ms, "sessionStartedAt": updated_ms,
                               "sessionFile": f"{sid}.jsonl"}}


def exec_defaults(cwd: str) -> dict[str, Any]:
    """What ``agent exec`` merges into its config and ``agent --local`` does not (OpenClaw
    2026.9.6, ``buildExecConfigDefaults`` and ``buildExecRunOverlay``): no login-shell env, no
    agent sandbox (the assay sandbox is the wall), no workspace bootstrap files, the workspace
    is the task's, the coding tool profile with file tools held to it and exec allowed."""
    return {"env": {"shellEnv": {"enabled": False}},
            "agents": {"defaults": {"sandbox": {"mode": "off"}, "workspace": cwd, "skipBootstrap": True}},
            "skills": {"load": {"watch": False}},
            "tools": {"profile": "coding", "fs": {"workspaceOnly": True}, "exec": {"mode": "full"}}}


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base`` (nested dicts merged, anything else replaced)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@dataclass(frozen=True)
class Store:
    """The agent database's transcript and runtime events, as ``(session id, seq, event)``."""

    transcript: list[tuple[str, int, dict[str, Any]]]
    runtime: list[tuple[str, int, dict[str, Any]]]

    def sessions(self) -> list[str]:
        return sorted({sid for sid, _, _ in self.transcript})


@dataclass(frozen=True)
class Mark:
    """The last transcript and runtime seq of the conversation's session before a turn."""

    transcript: int = -1
    runtime: int = -1


def read_store(home: Path, why: str) -> Store:
    """The default agent's database (a private copy, never through a link, read within the
    bounds of :mod:`.safe_files`); :class:`SessionLost` naming ``why`` when it is missing or not
    safe to read."""
    budget = [safe_files.MAX_BYTES]
    try:
        with safe_files.sqlite_copy(home, AGENT_DB) as db:
            tables = safe_files.plain_tables(db, AGENT_DB, ["transcript_events", "trajectory_runtime_events"])
            transcript: list[tuple[str, int, dict[str, Any]]] = []
            runtime: list[tuple[str, int, dict[str, Any]]] = []
            if "transcript_events" in tables:
                packed = "event_zstd" if "event_zstd" in _columns(db, "transcript_events") else "NULL"
                for sid, seq, raw, z in db.execute(f"SELECT session_id, seq, event_json, {packed} FROM "
                                                   "transcript_events ORDER BY session_id, seq"):
                    if (e := _decode(raw, z, budget)) is not None:
                        transcript.append((str(sid), int(seq), e))
            if "trajectory_runtime_events" in tables:
                for sid, seq, raw in db.execute("SELECT session_id, seq, event_json FROM trajectory_runtime_events "
                                                "ORDER BY session_id, seq"):
                    if (e := _decode(raw, None, budget)) is not None:
                        runtime.append((str(sid), int(seq), e))
            return Store(transcript, runtime)
    except (OSError, sqlite3.Error, ValueError, TypeError) as e:
        raise SessionLost(f"{why}: OpenClaw's session store $HOME/{AGENT_DB} cannot be read safely ({e})") from None


def check(home: Path, sid: str, why: str, min_users: int = 0) -> Store:
    """The store, when session ``sid`` is the only one in it and holds at least ``min_users``
    user messages on its active branch; else :class:`SessionLost`."""
    store = read_store(home, why)
    found = store.sessions()
    if found != [sid]:
        raise SessionLost(f"{why}: OpenClaw session {sid} is not the one session in $HOME/{AGENT_DB} "
                          f"(sessions there: {found or 'none'})")
    users = sum(1 for m in messages(store) if m.get("role") == "user")
    if users < min_users:
        raise SessionLost(f"{why}: OpenClaw session {sid} holds {users} user message(s), fewer than the {min_users} "
                          "of the turns before: it is not the conversation so far")
    return store


def messages(store: Store) -> list[dict[str, Any]]:
    """The messages on the session's active branch."""
    return [e["message"] for e in active_branch([e for _, _, e in store.transcript])
            if e.get("type") == "message" and isinstance(e.get("message"), dict)]


def mark_of(store: Store | None) -> Mark:
    if store is None:
        return Mark()
    return Mark(max((seq for _, seq, _ in store.transcript), default=-1),
                max((seq for _, seq, _ in store.runtime), default=-1))


def turn_events(store: Store, mark: Mark) -> list[Normalized]:
    """What a turn added to the session (entries after the mark) as trace events."""
    return normalize([e for _, seq, e in store.transcript if seq > mark.transcript],
                     [e for _, seq, e in store.runtime if seq > mark.runtime])
