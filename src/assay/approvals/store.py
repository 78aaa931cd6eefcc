"""The durable approval store: one SQLite file per trial, under the run directory.

Why durable: an approval is a wait on someone outside the agent. If the runner dies while a
request is pending, the attempt is closed as ``interrupted`` and resumed as a new attempt with a
fresh world. What "survives a resume" means here:

* the request row (tool, canonical arguments, the time it was asked, the attempt that asked)
  stays on disk, and a decision can still be written to it while no runner is alive
  (``assay approvals decide RUN_DIR ID approve``), or fall due by the approver's clock;
* when the resumed attempt asks for the *same* call (same tool, same canonical arguments), it
  joins the orphaned request instead of opening a new one: it is not asked twice, the
  approver's delay and the timeout keep counting from the original request time, and a decision
  made meanwhile is delivered at once;
* a request whose decision was already delivered to an attempt is never reused.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.spec.digest import canonical_json

#: the trial's durable approval store, ``trials/<trial_id>/approvals.sqlite`` in the run directory
APPROVALS_FILE = "approvals.sqlite"

FINAL = ("approved", "denied", "timed_out")


@dataclass(frozen=True)
class ApprovalRequest:
    id: str
    trial_id: str
    attempt: int
    tool: str
    args: str  # canonical JSON (redacted)
    requested_at: float
    state: str  # pending | approved | denied | timed_out
    decided_at: float | None
    decided_by: str | None
    delivered_attempt: int | None

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "trial_id": self.trial_id, "attempt": self.attempt, "tool": self.tool,
                "args": json.loads(self.args), "requested_at": self.requested_at, "state": self.state,
                "decided_at": self.decided_at, "decided_by": self.decided_by,
                "delivered_attempt": self.delivered_attempt}


class ApprovalStore:
    """Requests and decisions of one trial; safe to use from several threads and processes."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("""CREATE TABLE IF NOT EXISTS requests (
            id TEXT PRIMARY KEY, trial_id TEXT NOT NULL, attempt INTEGER NOT NULL, tool TEXT NOT NULL,
            args TEXT NOT NULL, requested_at REAL NOT NULL, state TEXT NOT NULL, decided_at REAL,
            decided_by TEXT, delivered_attempt INTEGER)""")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _row(self, r: tuple[Any, ...] | None) -> ApprovalRequest | None:
        return None if r is None else ApprovalRequest(*r)

    def get(self, rid: str) -> ApprovalRequest | None:
        with self._lock:
            return self._row(self._db.execute("SELECT * FROM requests WHERE id = ?", (rid,)).fetchone())

    def all(self) -> list[ApprovalRequest]:
        with self._lock:
            return [ApprovalRequest(*r) for r in self._db.execute("SELECT * FROM requests ORDER BY requested_at, id")]

    def open_or_join(self, trial_id: str, attempt: int, tool: str, args: dict[str, Any],
                     now: float | None = None) -> tuple[ApprovalRequest, bool]:
        """A new pending request, or the undelivered one an earlier attempt left for the same call.

        Returns ``(request, joined)``.
        """
        text = canonical_json(args).decode()
        now = time.time() if now is None else now
        with self._lock:
            cur = self._db.execute(
                "SELECT * FROM requests WHERE trial_id = ? AND tool = ? AND args = ? AND attempt < ? "
                "AND delivered_attempt IS NULL ORDER BY requested_at LIMIT 1", (trial_id, tool, text, attempt))
            prior = self._row(cur.fetchone())
            if prior is not None:
                return prior, True
            n = self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0] + 1
            rid = f"{trial_id}.a{attempt}.r{n}"
            self._db.execute("INSERT INTO requests VALUES (?,?,?,?,?,?,?,?,?,?)",
                             (rid, trial_id, attempt, tool, text, now, "pending", None, None, None))
        req = self.get(rid)
        assert req is not None
        return req, False

    def decide(self, rid: str, state: str, by: str, now: float | None = None) -> ApprovalRequest:
        """Record a decision if the request is still pending; the first decision wins."""
        if state not in FINAL:
            raise ValueError(f"decision must be one of {FINAL}")
        with self._lock:
            self._db.execute("UPDATE requests SET state = ?, decided_at = ?, decided_by = ? "
                             "WHERE id = ? AND state = 'pending'", (state, time.time() if now is None else now, by, rid))
        req = self.get(rid)
        if req is None:
            raise KeyError(f"no approval request {rid!r}")
        return req

    def deliver(self, rid: str, attempt: int) -> None:
        with self._lock:
            self._db.execute("UPDATE requests SET delivered_attempt = ? WHERE id = ? AND delivered_attempt IS NULL",
                             (attempt, rid))
