"""The ticket queue world: read tickets, comment on them, change their status. Ticket bodies
and comments are where prompt-injection cases hide their instructions."""

from __future__ import annotations

from typing import Any

from assay.spec.worlds import TicketsInit
from assay.worlds.base import ToolDef, ToolError, World, schema
from assay.worlds.registry import world

STATUSES = ["open", "pending", "resolved", "closed"]


@world("tickets")
class Tickets(World):
    tables = {"tickets": "id", "comments": "id"}
    declaration = TicketsInit
    init: TicketsInit

    def create(self) -> None:
        self.db.executescript("""
            CREATE TABLE tickets (id TEXT PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL, status TEXT NOT NULL,
                requester TEXT NOT NULL, priority TEXT NOT NULL);
            CREATE TABLE comments (id TEXT PRIMARY KEY, ticket_id TEXT NOT NULL, author TEXT NOT NULL, body TEXT NOT NULL);
        """)
        n = 0
        for t in self.init.tickets:
            self.db.execute("INSERT INTO tickets VALUES (?,?,?,?,?,?)",
                            (t.id, t.title, t.body, t.status, t.requester, t.priority))
            for c in t.comments:
                n += 1
                self.db.execute("INSERT INTO comments VALUES (?,?,?,?)",
                                (f"c{n}", t.id, c.get("author", ""), c.get("body", "")))

    def tools(self) -> list[ToolDef]:
        tid = {"type": "string", "minLength": 1}
        return [
            ToolDef("tickets.list_tickets", "List tickets (id, title, status, priority), optionally by status.",
                    schema({"status": {"type": "string", "enum": STATUSES}}), self.list),
            ToolDef("tickets.read_ticket", "Read one ticket with its comments.", schema({"id": tid}, ["id"]), self.read),
            ToolDef("tickets.add_comment", "Add a comment to a ticket (visible to the requester).",
                    schema({"id": tid, "body": {"type": "string", "minLength": 1}}, ["id", "body"]), self.comment,
                    writes=True, effect=lambda a: f"tickets.comment:{a.get('id')}"),
            ToolDef("tickets.set_status", "Change a ticket's status.",
                    schema({"id": tid, "status": {"type": "string", "enum": STATUSES}}, ["id", "status"]),
                    self.set_status, writes=True, effect=lambda a: f"tickets.status:{a.get('id')}:{a.get('status')}"),
        ]

    def _ticket(self, tid: str) -> dict[str, Any]:
        row = self.one("SELECT * FROM tickets WHERE id = ?", tid)
        if row is None:
            raise ToolError(f"no ticket {tid!r}")
        return row

    def list(self, a: dict[str, Any]) -> dict[str, Any]:
        sql, params = "SELECT id, title, status, priority FROM tickets", []
        if "status" in a:
            sql += " WHERE status = ?"
            params.append(a["status"])
        return {"tickets": [dict(r) for r in self.db.execute(sql + " ORDER BY rowid", params)]}

    def read(self, a: dict[str, Any]) -> dict[str, Any]:
        t = self._ticket(a["id"])
        t["comments"] = [dict(r) for r in self.db.execute(
            "SELECT author, body FROM comments WHERE ticket_id = ? ORDER BY rowid", (a["id"],))]
        return {"ticket": t}

    def comment(self, a: dict[str, Any]) -> dict[str, Any]:
        self._ticket(a["id"])
        cid = self.next_id("comments", "c")
        self.db.execute("INSERT INTO comments VALUES (?,?,?,?)", (cid, a["id"], "agent", a["body"]))
        return {"comment_id": cid}

    def set_status(self, a: dict[str, Any]) -> dict[str, Any]:
        old = self._ticket(a["id"])["status"]
        self.db.execute("UPDATE tickets SET status = ? WHERE id = ?", (a["status"], a["id"]))
        return {"id": a["id"], "old_status": old, "status": a["status"]}
