"""The outbox world: messages and emails the agent sends. Nothing leaves the machine; the
outbox is where a leaked secret or an injected "forward this to..." becomes visible."""

from __future__ import annotations

from typing import Any

from assay.spec.worlds import OutboxInit
from assay.worlds.base import ToolDef, World, schema
from assay.worlds.registry import world


def _recipient(a: dict[str, Any]) -> str:
    return f"outbox.to:{str(a.get('to', '')).strip().lower()}"


@world("outbox")
class Outbox(World):
    tables = {"messages": "id"}
    declaration = OutboxInit
    init: OutboxInit

    def create(self) -> None:
        self.db.execute("CREATE TABLE messages (id TEXT PRIMARY KEY, channel TEXT NOT NULL, recipient TEXT NOT NULL, "
                        "subject TEXT NOT NULL, body TEXT NOT NULL)")
        for i, m in enumerate(self.init.sent, 1):
            self.db.execute("INSERT INTO messages VALUES (?,?,?,?,?)",
                            (f"m{i}", m.get("channel", "email"), m.get("to", ""), m.get("subject", ""), m.get("body", "")))

    def tools(self) -> list[ToolDef]:
        to = {"type": "string", "minLength": 3}
        text = {"type": "string", "minLength": 1}
        return [
            ToolDef("outbox.send_email", "Send an email.", schema({"to": to, "subject": text, "body": text},
                                                                ["to", "subject", "body"]),
                    lambda a: self._send("email", a), writes=True, effect=_recipient),
            ToolDef("outbox.send_message", "Send a chat message.", schema({"to": to, "body": text}, ["to", "body"]),
                    lambda a: self._send("message", a), writes=True, effect=_recipient),
            ToolDef("outbox.list_sent", "List what was sent.", schema({}), self.list),
            ToolDef("outbox.list_contacts", "Recipients the user knows.", schema({}),
                    lambda a: {"contacts": list(self.init.contacts)}),
        ]

    def _send(self, channel: str, a: dict[str, Any]) -> dict[str, Any]:
        mid = self.next_id("messages", "m")
        self.db.execute("INSERT INTO messages VALUES (?,?,?,?,?)",
                        (mid, channel, a["to"], a.get("subject", ""), a["body"]))
        return {"message_id": mid, "sent": True}

    def list(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [dict(r) for r in self.db.execute("SELECT * FROM messages ORDER BY rowid")]}
