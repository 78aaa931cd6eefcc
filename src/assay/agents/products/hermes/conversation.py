"""Hermes Agent's own session in a conversation task.

The typed history is written into ``$HERMES_HOME/state.db`` by Hermes' own ``SessionDB``
(``hermes_state``, the module every Hermes run records its session with), run with Hermes' own
Python inside the attempt's sandbox before the agent's first turn: the schema, counters and
row shapes are the installed version's, not a copy of them. ``hermes chat -q … --resume <id>``
then loads that session as its conversation history, as it loads any session it wrote itself.

Between turns the store is the agent's and hostile: it is read from a private copy taken without
following links (:func:`hermes_format.read_state_db`), and the conversation's session must be
the one session there, holding the user messages of the turns before.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agents.base import SessionLost
from assay.agents.products.hermes import session_format as hermes_format
from assay.untrusted import files as safe_files

STATE_DB = "hermes/state.db"  # relative to the agent home
#: the session source Hermes records for third-party integrations (kept out of a user's lists)
SOURCE = "tool"
EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z: seeded messages are older than any live one

#: run by Hermes' own Python in the sandbox: the history (JSON on stdin) into state.db
SEED_SCRIPT = """\
import json, os, sys
from pathlib import Path
from hermes_state import SessionDB
d = json.load(sys.stdin)
db = SessionDB(Path(os.environ["HERMES_HOME"]) / "state.db")
try:
    db.create_session(d["id"], d["source"], model=d["model"], cwd=d["cwd"])
    for m in d["messages"]:
        db.append_message(d["id"], m["role"], content=m.get("content"), tool_calls=m.get("tool_calls"),
                          tool_call_id=m.get("tool_call_id"), tool_name=m.get("tool_name"),
                          finish_reason=m.get("finish_reason"), timestamp=m["timestamp"])
finally:
    db.close()
print(d["id"])
"""


def seed_payload(sid: str, cwd: str, model: str, messages: list[dict[str, Any]]) -> bytes:
    """The stdin of :data:`SEED_SCRIPT`: chat messages as the rows Hermes writes for them (the
    tool's name on its result row, a finish reason on every assistant row)."""
    names: dict[str, str] = {}
    rows: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        row = {**m, "timestamp": EPOCH + i + 1}
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            row["finish_reason"] = "tool_calls" if m.get("tool_calls") else "stop"
        elif m.get("role") == "tool":
            row["tool_name"] = names.get(m.get("tool_call_id", ""), "")
        rows.append(row)
    return json.dumps({"id": sid, "source": SOURCE, "model": model, "cwd": cwd, "messages": rows}).encode()


@dataclass(frozen=True)
class Mark:
    """Where the conversation's session stood before a turn: its last message row and its token
    totals (Hermes counts tokens per session, so a turn's are the difference)."""

    last_id: int = 0
    totals: tuple[float, ...] = (0, 0, 0, 0.0)


TOTALS = ("input_tokens", "output_tokens", "cache_read_tokens", "estimated_cost_usd")


def sessions(home: Path, why: str) -> list[dict[str, Any]]:
    """Every session in the agent's ``state.db`` (read from a private copy, never through a
    link); :class:`SessionLost` naming ``why`` when the store is missing or not safe to read."""
    try:
        return hermes_format.read_state_db(home / STATE_DB, home=home)
    except (OSError, sqlite3.Error) as e:
        raise SessionLost(f"{why}: Hermes' session store $HERMES_HOME/state.db cannot be read safely ({e})") from None


def the_session(home: Path, why: str, expected: str | None, min_users: int = 0) -> dict[str, Any]:
    """The conversation's session: the one session in the store (``expected`` if known), holding
    at least ``min_users`` user messages (the turns before); else :class:`SessionLost`."""
    found = sessions(home, why)
    ids = [s.get("id") for s in found]
    if len(found) != 1 or (expected is not None and ids != [expected]):
        raise SessionLost(f"{why}: the conversation's Hermes session{f' {expected}' if expected else ''} is not "
                          f"the one session in $HERMES_HOME/state.db (sessions there: {ids or 'none'})")
    users = sum(1 for m in found[0]["messages"] if m.get("role") == "user")
    if users < min_users:
        raise SessionLost(f"{why}: Hermes session {ids[0]} holds {users} user message(s), fewer than the "
                          f"{min_users} of the turns before: it is not the conversation so far")
    return found[0]


def mark_of(session: dict[str, Any] | None) -> Mark:
    if session is None:
        return Mark()
    ids = [m["id"] for m in session["messages"] if isinstance(m.get("id"), int)]
    return Mark(max(ids, default=0), tuple(session.get(k) or 0 for k in TOTALS))


def since(session: dict[str, Any], mark: Mark) -> dict[str, Any]:
    """The session as this turn left it, reduced to what the turn added: its new message rows
    and the tokens it spent."""
    out = {**session, "messages": [m for m in session["messages"] if isinstance(m.get("id"), int)
                                   and m["id"] > mark.last_id]}
    for key, before in zip(TOTALS, mark.totals):
        out[key] = (session.get(key) or 0) - before
    out["actual_cost_usd"] = None
    return out


def present(home: Path) -> bool:
    return safe_files.is_file(home, STATE_DB)
