"""The import graph of ``src/assay``: every package imports only the rooms below it, and no two
packages or modules import each other (directly or around a loop).

Every ``import`` statement counts, at module level or inside a function (a deferred import is
still a dependency), and so does a literal ``optional_import("assay...")`` or
``importlib.import_module("assay...")``. The allowed directions are written down once, in
:data:`ALLOWED`, and ``docs/architecture.md`` shows the same table (checked below).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.conftest import ROOT

SRC = ROOT / "src"
PKG = SRC / "assay"
DOC = ROOT / "docs" / "architecture.md"

#: room -> the rooms it may import (a room is a package under assay/, or a top-level module).
#: ``assay`` itself (the lazy public facade, imported for ``__version__``/``__file__``) may be
#: imported by any room and imports none statically.
ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "_optional": frozenset(),
    "untrusted": frozenset(),
    "registry": frozenset({"errors", "_optional"}),
    "spec": frozenset({"errors", "_optional", "registry", "untrusted"}),
    "records": frozenset({"errors", "spec"}),
    "trace": frozenset({"errors", "spec"}),
    "sandbox": frozenset({"errors", "_optional", "registry", "untrusted", "spec"}),
    "environments": frozenset({"errors", "untrusted", "spec", "records", "sandbox"}),
    "store": frozenset({"errors", "untrusted", "spec", "records", "trace"}),
    "run_budget": frozenset({"errors", "spec", "records", "store"}),
    "harness": frozenset({"errors", "spec", "records", "trace", "sandbox", "run_budget"}),
    "approvals": frozenset({"errors", "spec"}),
    "worlds": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                         "harness", "approvals"}),
    "gateway": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                          "run_budget", "harness"}),
    "agents": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                         "harness"}),
    "judge": frozenset({"errors", "registry", "spec", "records", "trace", "harness", "gateway"}),
    "verify": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                         "environments", "worlds", "judge"}),
    "conversations": frozenset({"errors", "untrusted", "spec", "records", "trace", "sandbox", "harness", "gateway",
                                "agents", "verify"}),
    "score": frozenset({"errors", "_optional", "spec", "records", "trace", "store", "run_budget"}),
    "report": frozenset({"errors", "_optional", "untrusted", "registry", "spec", "records", "trace", "store", "score",
                         "judge"}),
    "observe": frozenset({"errors", "spec", "records", "trace", "store", "score"}),
    "run": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                      "environments", "store", "run_budget", "harness", "worlds", "gateway", "agents", "verify", "judge",
                      "conversations"}),
    "deploy": frozenset({"errors"}),
    "plugins": frozenset({"errors", "registry"}),
    "variants": frozenset({"errors", "untrusted", "spec", "store", "score"}),
    "cases": frozenset({"errors", "untrusted", "spec", "trace"}),
    "importers": frozenset({"errors", "untrusted", "spec", "records", "environments"}),
    "view": frozenset({"errors", "records", "spec", "store", "score", "report"}),
    "cli": frozenset({"errors", "_optional", "registry", "untrusted", "spec", "records", "trace", "sandbox",
                      "store", "run_budget", "harness", "approvals", "worlds", "gateway", "agents", "verify",
                      "judge", "conversations", "score", "report", "run", "deploy", "observe", "variants",
                      "cases", "environments", "importers", "view", "plugins"}),
}
DYNAMIC = {"optional_import", "import_module"}


def modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        parts = list(p.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The assay modules ``name`` imports (a ``from X import y`` of submodule ``y`` is X.y)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        if not target.startswith("assay"):
            return
        subs = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
        found.update(subs or [target])
        if len(subs) < len(names):
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                add(a.name, [])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            add(target, [a.name for a in node.names])
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in DYNAMIC and isinstance(node.args[0].value, str):
                add(node.args[0].value, [])
    found.discard(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "assay"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in edges:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_every_import_goes_in_an_allowed_direction() -> None:
    edges = graph()
    rooms = {room(m) for m in edges} - {"assay"}
    assert rooms <= set(ALLOWED), f"rooms without a row in ALLOWED (add one, and to docs/architecture.md): " \
                                  f"{sorted(rooms - set(ALLOWED))}"
    wrong = sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets
                   if room(a) != room(b) and room(b) != "assay" and room(b) not in ALLOWED.get(room(a), ()))
    assert not wrong, "imports against the allowed directions:\n" + "\n".join(wrong)


def test_the_facade_imports_nothing_statically() -> None:
    assert {m for m in graph()["assay"] if room(m) != "assay"} == set()


def test_no_cycle_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for a, targets in graph().items():
        for b in targets:
            if room(a) != room(b) and "assay" not in (room(a), room(b)):
                edges[room(a)].add(room(b))
    for r in ALLOWED:
        edges.setdefault(r, set())
    assert cycles(edges) == []
    # and the table itself is a strict order: no room may import one that may import it back
    assert cycles({r: set(t) for r, t in ALLOWED.items()}) == []


def test_no_cycle_between_modules() -> None:
    found = cycles(graph())
    assert found == [], "module import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_only_the_cli_and_the_engine_import_the_engine() -> None:
    users = sorted(a for a, targets in graph().items() for b in targets
                   if room(b) == "run" and room(a) not in ("run", "cli"))
    assert users == []


def test_the_checker_sees_function_level_and_dynamic_imports(tmp_path: Path) -> None:
    """The checker itself: a deferred import and a literal optional_import are edges; a cycle is found."""
    p = tmp_path / "m.py"
    p.write_text("def f():\n    from assay.run.attempt.trial import x\n    optional_import('assay.cli.main')\n")
    known = {"assay.run.attempt.trial": p, "assay.cli.main": p, "assay.worlds.calls": p}
    assert imports_of("assay.worlds.calls", p, known) == {"assay.run.attempt.trial", "assay.cli.main"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_docs_show_the_same_table() -> None:
    rows = re.findall(r"^\| `([a-z_]+)` \| ([^|]*) \|", DOC.read_text(), re.M)
    documented = {r: frozenset(re.findall(r"`([a-z_]+)`", targets)) for r, targets in rows}
    assert documented == ALLOWED, "docs/architecture.md's table differs from tests/test_import_graph.py:ALLOWED"
