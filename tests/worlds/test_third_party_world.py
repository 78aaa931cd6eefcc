"""A world assay does not ship, registered by a third party, declared by a task and run end to end.

The world is real: its own SQLite table, its own tools, reached by the oracle's solution through
the ``assay-tool`` shim inside the default sandbox, and checked by a ``world_rows`` predicate.
Before a world could declare its own initial-state model, ``worlds: {mailroom: ...}`` was refused
("unknown field") because the task schema was a closed list of the built-in worlds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel, ConfigDict, Field

import assay
from assay.errors import SpecError
from assay.run import RunOptions, start_run
from assay.spec.load import load_suite
from assay.worlds.base import ToolDef, ToolError, World, schema
from assay.worlds.registry import WORLDS


class MailroomInit(BaseModel):
    """Parcels waiting in the mailroom when the attempt starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    parcels: list[str] = Field(min_length=1)


class Mailroom(World):
    declaration: ClassVar[type[BaseModel]] = MailroomInit
    tables = {"parcels": "id"}
    init: MailroomInit

    def create(self) -> None:
        self.db.execute("CREATE TABLE parcels (id TEXT PRIMARY KEY, status TEXT NOT NULL)")
        self.db.executemany("INSERT INTO parcels VALUES (?, 'waiting')", [(p,) for p in self.init.parcels])

    def tools(self) -> list[ToolDef]:
        return [ToolDef("mailroom.list_parcels", "Parcels and their status.", schema({}),
                        lambda a: {"parcels": [dict(r) for r in self.db.execute("SELECT * FROM parcels")]}),
                ToolDef("mailroom.deliver", "Deliver one parcel.", schema({"id": {"type": "string"}}, ["id"]),
                        self._deliver, writes=True)]

    def _deliver(self, a: dict[str, Any]) -> dict[str, Any]:
        if self.one("SELECT id FROM parcels WHERE id = ?", a["id"]) is None:
            raise ToolError(f"no parcel {a['id']!r}")
        self.db.execute("UPDATE parcels SET status = 'delivered' WHERE id = ?", (a["id"],))
        return {"delivered": a["id"]}


@pytest.fixture
def mailroom():
    assay.register("world", "mailroom", Mailroom)
    try:
        yield Mailroom
    finally:
        WORLDS.unregister("mailroom")


SUITE = """name: mail
version: "1.0.0"
categories: [{id: c, weight: 1}]
default_budget: {wall_time_s: 60, turns: 4, tool_calls: 6}
"""
TASK = """category: c
tools: ["mailroom.*"]
worlds:
  mailroom: {parcels: [p1, p2]}
predicates:
  - {id: delivered, kind: world_rows, world: mailroom, table: parcels, where: {id: p1}, count: 1,
     expect: {status: delivered}}
  - {id: other-waits, kind: world_rows, world: mailroom, table: parcels, where: {id: p2}, count: 1,
     expect: {status: waiting}}
"""
SOLVE = '#!/bin/sh\nset -eu\n"$ASSAY_TOOL" mailroom.deliver id=p1\n'


def _suite(root: Path, task: str = TASK) -> Path:
    d = root / "tasks" / "deliver"
    (d / "solution").mkdir(parents=True)
    (d / "workspace").mkdir()
    (root / "suite.yaml").write_text(SUITE)
    (d / "task.yaml").write_text(task)
    (d / "prompt.md").write_text("Deliver parcel p1 and nothing else.\n")
    (d / "solution" / "solve.sh").write_text(SOLVE)
    (d / "solution" / "solve.sh").chmod(0o755)
    return root


@pytest.mark.slow
def test_a_registered_world_is_declared_by_a_task_and_checked_end_to_end(tmp_path, mailroom):
    suite = _suite(tmp_path / "suite")
    spec = load_suite(suite).task("deliver").spec
    assert isinstance(spec.worlds.mailroom, MailroomInit) and spec.worlds.mailroom.parcels == ["p1", "p2"]
    results = start_run(RunOptions(suite=suite, agents=["oracle", "nop"], out=tmp_path / "run")).results
    by_agent = {r.agent: r for r in results}
    assert by_agent["oracle"].end_state.value == "pass", (by_agent["oracle"].predicates, by_agent["oracle"].errors)
    assert by_agent["nop"].end_state.value == "fail"
    assert [p.id for p in by_agent["nop"].predicates if not p.passed] == ["delivered"]


def test_a_registered_worlds_declaration_is_validated_by_its_own_model(tmp_path, mailroom):
    suite = _suite(tmp_path / "suite", TASK.replace("{parcels: [p1, p2]}", "{parcels: []}"))
    with pytest.raises(SpecError) as e:
        load_suite(suite)
    [p] = e.value.problems
    assert p.file.endswith("task.yaml") and p.field == "worlds.mailroom.parcels"


def test_an_unknown_world_kind_names_the_file_the_field_and_the_installed_kinds(tmp_path):
    suite = _suite(tmp_path / "suite", TASK.replace("  mailroom:", "  mailbox:"))
    with pytest.raises(SpecError) as e:
        load_suite(suite)
    [p] = [p for p in e.value.problems if p.field.startswith("worlds")]
    assert p.file == str(suite / "tasks" / "deliver" / "task.yaml")
    assert p.field == "worlds.mailbox"
    assert "unknown world kind 'mailbox'" in p.message
    for kind in ("ledger", "outbox", "tickets", "webshop"):
        assert kind in p.fix
    assert "assay.worlds" in p.fix  # the entry-point group a third party publishes under


def test_a_world_without_a_declaration_is_refused_under_worlds_with_its_fix(tmp_path):
    suite = _suite(tmp_path / "suite", TASK.replace("  mailroom: {parcels: [p1, p2]}", "  user: {}"))
    with pytest.raises(SpecError) as e:
        load_suite(suite)
    [p] = [p for p in e.value.problems if p.field.startswith("worlds")]
    assert p.field == "worlds.user" and "takes no initial state" in p.message
    assert p.fix.startswith("remove worlds.user") and "ledger" in p.fix
