"""The world interface: a harness-run service whose state lives in SQLite outside the sandbox.

A world declares its tools (name, description, JSON Schema of the arguments, whether the tool
writes), applies calls to its own tables, and can dump its state as plain JSON
(``{table: {row_id: row}}``) so that the initial state, the final state and their exact diff
can be handed to the verifier. Worlds do no policy, tracing or approvals: that is the
dispatcher's job (:mod:`assay.worlds.dispatch`).
"""

from __future__ import annotations

import abc
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar

from pydantic import BaseModel

from assay.spec.digest import canonical_json

if TYPE_CHECKING:
    from assay.sandbox.base import Endpoint
    from assay.records.incident import Incident
    from assay.trace.redact import Redactor


class ToolError(Exception):
    """A call the world refused (bad id, invalid category...): returned to the agent as ok=false."""


@dataclass(frozen=True)
class ToolDef:
    """One tool of the contract: what the agent sees, and how the world runs it."""

    name: str  # "<world>.<tool>"
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], Any] = field(compare=False)
    writes: bool = False  # changes world state (a side effect)
    effect: Callable[[dict[str, Any]], str | None] | None = field(default=None, compare=False)
    slow: bool = False  # blocks for long (drives a browser): run in a thread, not on the tool server's loop
    asks: bool = False  # an approval request: only a person's yes may reach it, so a policy that does not ask refuses it

    def public(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def validate(self, args: dict[str, Any]) -> None:
        """Raise ToolError when ``args`` do not satisfy the tool's JSON Schema."""
        import jsonschema  # on the first tool call, not at every run's start-up

        try:
            jsonschema.validate(args, self.input_schema)
        except jsonschema.ValidationError as e:
            where = "/".join(str(p) for p in e.absolute_path)
            raise ToolError(f"invalid arguments{(' at ' + where) if where else ''}: {e.message}") from None

    def effect_key(self, args: dict[str, Any]) -> str | None:
        """What this call would change, independent of the route taken (for approval bypass)."""
        return self.effect(args) if self.effect else None


def schema(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    """A closed JSON Schema object (unknown arguments are refused)."""
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


@dataclass
class WorldReport:
    """What a world adds to its session's report beyond its tables: verifier data recorded by
    the harness (e.g. a request log), evidence files, and incidents it saw itself."""

    extra: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    incidents: list["Incident"] = field(default_factory=list)


class World(abc.ABC):
    """One world of one attempt, backed by its own SQLite connection."""

    kind: ClassVar[str] = ""
    #: the model of its initial state in a task's ``worlds: {KIND: ...}`` (``None``: not declarable)
    declaration: ClassVar[type[BaseModel] | None] = None
    #: tables dumped as state, with their primary key column
    tables: ClassVar[dict[str, str]] = {}

    def __init__(self, db: sqlite3.Connection, init: BaseModel):
        self.db = db
        self.db.row_factory = sqlite3.Row
        self.init = init

    @abc.abstractmethod
    def create(self) -> None:
        """Create the tables and load the initial state from ``self.init``."""

    @abc.abstractmethod
    def tools(self) -> list[ToolDef]:
        """The full tool contract of this world (the task's allow-list filters it)."""

    def bind(self, *, redactor: "Redactor", root: Path) -> None:
        """Called once per attempt with the attempt's redactor and the worlds' harness-side folder."""

    def serve(self, host: str) -> "Endpoint | None":
        """Serve the world to the agent's sandbox on a bridge endpoint of its own (a web app for a
        product's own browser), when the task asks for it; most worlds are reached by tools only."""
        return None

    def report(self) -> WorldReport:
        """At the end of the attempt, before the database closes (most worlds have nothing)."""
        return WorldReport()

    def close(self) -> None:
        """End what the world started (a browser); the session closes the database itself."""

    def state(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every row of every table, keyed by primary key, as plain JSON values."""
        out: dict[str, dict[str, dict[str, Any]]] = {}
        for table, key in self.tables.items():
            rows = self.db.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()  # noqa: S608 - fixed names
            out[table] = {str(r[key]): dict(r) for r in rows}
        return out

    def one(self, sql: str, *params: Any) -> dict[str, Any] | None:
        row = self.db.execute(sql, params).fetchone()
        return dict(row) if row else None

    def next_id(self, table: str, prefix: str) -> str:
        n = self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608
        while self.one(f"SELECT 1 AS x FROM {table} WHERE {self.tables[table]} = ?", f"{prefix}{n + 1}"):  # noqa: S608
            n += 1
        return f"{prefix}{n + 1}"


def diff_states(before: dict[str, dict[str, dict[str, Any]]],
                after: dict[str, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Exact row-level diff: per table, added rows, removed rows, changed fields ``[old, new]``."""
    out: dict[str, dict[str, Any]] = {}
    for table in sorted(set(before) | set(after)):
        b, a = before.get(table, {}), after.get(table, {})
        added = {k: a[k] for k in a if k not in b}
        removed = {k: b[k] for k in b if k not in a}
        changed: dict[str, dict[str, list[Any]]] = {}
        for k in set(a) & set(b):
            fields = {f: [b[k].get(f), a[k].get(f)] for f in set(a[k]) | set(b[k]) if b[k].get(f) != a[k].get(f)}
            if fields:
                changed[k] = fields
        if added or removed or changed:
            out[table] = {"added": added, "removed": removed, "changed": changed}
    return out


def canonical(value: Any) -> str:
    """A stable text form of JSON data (for idempotency matching): :func:`canonical_json` as text."""
    return canonical_json(value).decode()
