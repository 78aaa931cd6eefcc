"""A built-in world is its module and one line in ``spec/world_kinds.py:BUILTIN_WORLDS``.

Before, it was also a field of ``spec/worlds.py:WorldsSpec`` (the closed list of what a task may
declare): two files and two tables. Here a new world module is dropped beside the others, given
its line, and declared by a task; and no other literal in the source lists the world kinds.
"""

from __future__ import annotations

import ast
import sys

from pydantic import BaseModel

from assay.spec.task import TaskSpec
from assay.spec.world_kinds import BUILTIN_WORLDS, WORLD_DECLARATIONS
from assay.spec.worlds import WorldsSpec
from assay.worlds.registry import WORLDS, get_world
from assay.worlds.session import open_worlds
from tests.conftest import ROOT

CRATE = '''
from pydantic import BaseModel

from assay.worlds.base import ToolDef, World, schema
from assay.worlds.registry import world


class CrateInit(BaseModel):
    items: list[str]


@world("crate")
class Crate(World):
    declaration = CrateInit
    tables = {"items": "name"}

    def create(self) -> None:
        self.db.execute("CREATE TABLE items (name TEXT PRIMARY KEY)")
        self.db.executemany("INSERT INTO items VALUES (?)", [(i,) for i in self.init.items])

    def tools(self) -> list[ToolDef]:
        return [ToolDef("crate.list", "The items.", schema({}), lambda a: self.state())]
'''


def test_every_builtin_world_carries_the_model_a_task_declares_it_with():
    assert WorldsSpec.model_fields == {}  # no per-kind field: the kinds are not a table in spec/
    for kind in BUILTIN_WORLDS:
        assert WORLD_DECLARATIONS.get(kind) is get_world(kind).declaration
    assert get_world("user").declaration is None  # offered by `behaviour:`, never declared


def test_a_new_builtin_world_is_its_module_and_one_line(tmp_path, monkeypatch):
    (tmp_path / "crate_world.py").write_text(CRATE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(BUILTIN_WORLDS, "crate", "crate_world:Crate")  # the one line
    for reg in (WORLDS, WORLD_DECLARATIONS):  # as in a fresh process: the built-ins are read on first use
        monkeypatch.setattr(reg, "_builtin", None)
        monkeypatch.setattr(reg, "_resolved", {})
    try:
        spec = TaskSpec.model_validate({"id": "t", "category": "c", "tools": ["crate.*"],
                                        "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}],
                                        "worlds": {"crate": {"items": ["a", "b"]}}})
        assert isinstance(spec.worlds.crate, BaseModel) and spec.worlds.ledger is None
        worlds = open_worlds(spec, tmp_path / "worlds")
        assert worlds["crate"].state() == {"items": {"a": {"name": "a"}, "b": {"name": "b"}}}
        assert "crate" in WORLDS.builtin_names() and "crate" not in WORLDS._extra  # a built-in, not registered
        for w in worlds.values():
            w.db.close()
    finally:
        sys.modules.pop("crate_world", None)


def _kind_tables() -> list[str]:
    """Literal dicts, lists, sets and tuples in src/assay naming three or more world kinds."""
    kinds = {k for k in BUILTIN_WORLDS if k != "user"}
    found = []
    for path in (ROOT / "src" / "assay").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            elts = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
            if isinstance(node, (ast.Dict, ast.List, ast.Set, ast.Tuple)) and elts:
                names = {e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(names & kinds) >= 3:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_the_world_kinds_are_listed_once_in_the_source():
    assert [t.partition(":")[0] for t in _kind_tables()] == ["src/assay/spec/world_kinds.py"]
