"""The ledger world: bookkeeping entries (amount, currency, category, merchant, date) under a
frozen category list, with idempotency keys so a retried write is not booked twice."""

from __future__ import annotations

from typing import Any

from assay.spec.worlds import LedgerInit
from assay.worlds.base import ToolDef, ToolError, World, canonical, schema
from assay.worlds.registry import world

_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$", "description": "YYYY-MM-DD"}
_FIELDS = ("date", "amount", "currency", "category", "merchant", "note")


@world("ledger")
class Ledger(World):
    tables = {"entries": "id"}
    declaration = LedgerInit
    init: LedgerInit

    def create(self) -> None:
        self.db.executescript("""
            CREATE TABLE entries (id TEXT PRIMARY KEY, date TEXT NOT NULL, amount REAL NOT NULL,
                currency TEXT NOT NULL, category TEXT NOT NULL, merchant TEXT NOT NULL, note TEXT NOT NULL DEFAULT '');
            CREATE TABLE idempotency (key TEXT PRIMARY KEY, args TEXT NOT NULL, entry_id TEXT NOT NULL);
        """)
        for i, e in enumerate(self.init.entries, 1):
            self.db.execute("INSERT INTO entries VALUES (?,?,?,?,?,?,?)",
                            (e.id or f"e{i}", e.date, round(e.amount, 2), e.currency, e.category, e.merchant, e.note))

    def tools(self) -> list[ToolDef]:
        cats = {"type": "string", "enum": list(self.init.categories)}
        cur = {"type": "string", "enum": list(self.init.currencies)}
        entry_props = {"date": _DATE, "amount": {"type": "number", "exclusiveMinimum": 0}, "currency": cur,
                       "category": cats, "merchant": {"type": "string", "minLength": 1}, "note": {"type": "string"}}
        return [
            ToolDef("ledger.record_entry", "Record one expense entry in the user's ledger.",
                    schema({**entry_props, "idempotency_key": {"type": "string", "minLength": 1}},
                           ["date", "amount", "currency", "category", "merchant"]),
                    self.record, writes=True, effect=lambda a: f"ledger.entry:{a.get('merchant')}:{a.get('amount')}"),
            ToolDef("ledger.amend_entry", "Change fields of an existing entry (only the fields given).",
                    schema({"id": {"type": "string"}, **entry_props}, ["id"]),
                    self.amend, writes=True, effect=lambda a: f"ledger.id:{a.get('id')}"),
            ToolDef("ledger.delete_entry", "Delete an entry.", schema({"id": {"type": "string"}}, ["id"]),
                    self.delete, writes=True, effect=lambda a: f"ledger.id:{a.get('id')}"),
            ToolDef("ledger.list_entries", "List entries, optionally filtered by merchant, category or date range.",
                    schema({"merchant": {"type": "string"}, "category": {"type": "string"},
                            "date_from": _DATE, "date_to": _DATE}), self.list),
            ToolDef("ledger.lookup_idempotency_key", "Whether a write with this idempotency key happened, and its entry "
                    "(find out if a write whose answer was lost went through).",
                    schema({"idempotency_key": {"type": "string", "minLength": 1}}, ["idempotency_key"]), self.lookup),
            ToolDef("ledger.list_categories", "The categories an entry may use, and frozen merchant mappings.",
                    schema({}), self.categories),
        ]

    def record(self, a: dict[str, Any]) -> dict[str, Any]:
        key = a.pop("idempotency_key", None)
        if key is not None:
            prior = self.one("SELECT args, entry_id FROM idempotency WHERE key = ?", key)
            if prior is not None:
                if prior["args"] != canonical(a):
                    raise ToolError(f"idempotency key {key!r} was already used with different arguments")
                return {"entry": self.one("SELECT * FROM entries WHERE id = ?", prior["entry_id"]), "replayed": True}
        eid = self.next_id("entries", "e")
        self.db.execute("INSERT INTO entries VALUES (?,?,?,?,?,?,?)",
                        (eid, a["date"], round(float(a["amount"]), 2), a["currency"], a["category"], a["merchant"],
                         a.get("note", "")))
        if key is not None:
            self.db.execute("INSERT INTO idempotency VALUES (?,?,?)", (key, canonical(a), eid))
        return {"entry": self.one("SELECT * FROM entries WHERE id = ?", eid), "replayed": False}

    def lookup(self, a: dict[str, Any]) -> dict[str, Any]:
        prior = self.one("SELECT entry_id FROM idempotency WHERE key = ?", a["idempotency_key"])
        if prior is None:
            return {"found": False, "entry": None}
        return {"found": True, "entry": self.one("SELECT * FROM entries WHERE id = ?", prior["entry_id"])}

    def _get(self, eid: str) -> dict[str, Any]:
        row = self.one("SELECT * FROM entries WHERE id = ?", eid)
        if row is None:
            raise ToolError(f"no entry {eid!r}")
        return row

    def amend(self, a: dict[str, Any]) -> dict[str, Any]:
        self._get(a["id"])
        fields = {k: v for k, v in a.items() if k in _FIELDS}
        if not fields:
            raise ToolError("give at least one field to change")
        if "amount" in fields:
            fields["amount"] = round(float(fields["amount"]), 2)
        sets = ", ".join(f"{k} = ?" for k in fields)
        self.db.execute(f"UPDATE entries SET {sets} WHERE id = ?", (*fields.values(), a["id"]))  # noqa: S608
        return {"entry": self._get(a["id"])}

    def delete(self, a: dict[str, Any]) -> dict[str, Any]:
        self._get(a["id"])
        self.db.execute("DELETE FROM entries WHERE id = ?", (a["id"],))
        return {"deleted": a["id"]}

    def list(self, a: dict[str, Any]) -> dict[str, Any]:
        sql, params = "SELECT * FROM entries WHERE 1=1", []
        for col, op, key in (("merchant", "=", "merchant"), ("category", "=", "category"),
                             ("date", ">=", "date_from"), ("date", "<=", "date_to")):
            if key in a:
                sql += f" AND {col} {op} ?"
                params.append(a[key])
        return {"entries": [dict(r) for r in self.db.execute(sql + " ORDER BY rowid", params)]}

    def categories(self, a: dict[str, Any]) -> dict[str, Any]:
        return {"categories": list(self.init.categories), "currencies": list(self.init.currencies),
                "merchant_categories": dict(self.init.merchant_categories)}
