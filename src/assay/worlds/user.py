"""The user channel: how an agent asks for clarification or refuses, verifiably.

A clarification or a refusal is a tool call with a stable ``reason_code`` rather than prose,
so the ``behaviour`` predicate never has to read the agent's text. These calls change no
business state (``writes=False``) but are recorded in the ``interactions`` table."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from assay.worlds.base import ToolDef, World, schema
from assay.worlds.registry import world

_CODE = {"type": "string", "pattern": r"^[a-z][a-z0-9_]{1,63}$",
         "description": "Stable reason code, e.g. ambiguous_merchant, missing_amount, not_permitted."}


class UserInit(BaseModel):
    pass


@world("user")
class User(World):
    tables = {"interactions": "id"}

    def create(self) -> None:
        self.db.execute("CREATE TABLE interactions (id TEXT PRIMARY KEY, type TEXT NOT NULL, reason_code TEXT NOT NULL, "
                        "text TEXT NOT NULL)")

    def tools(self) -> list[ToolDef]:
        return [
            ToolDef("user.ask_clarification", "Ask the user a question instead of guessing; end your turn after it.",
                    schema({"question": {"type": "string", "minLength": 1}, "reason_code": _CODE},
                           ["question", "reason_code"]), lambda a: self._add("clarify", a["reason_code"], a["question"])),
            ToolDef("user.refuse", "Decline the request, with a reason code; end your turn after it.",
                    schema({"message": {"type": "string", "minLength": 1}, "reason_code": _CODE},
                           ["message", "reason_code"]), lambda a: self._add("refuse", a["reason_code"], a["message"])),
        ]

    def _add(self, kind: str, code: str, text: str) -> dict[str, Any]:
        iid = self.next_id("interactions", "i")
        self.db.execute("INSERT INTO interactions VALUES (?,?,?,?)", (iid, kind, code, text))
        return {"delivered": True, "note": "the user will answer in a later conversation; end your turn now"}
