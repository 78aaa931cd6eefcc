"""``assay plugins`` lists every extension point, and an unknown name is one error type
(``UnknownPlugin``) from every registry: exit 2, one line naming the kind, the name, the known
names and the fix, whichever command met it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli.plugins import PLUGIN_KINDS
from assay.plugins import registry_of
from assay.registry import resolve
from tests.conftest import ROOT, assay_env, cli_timeout, write_suite, write_task


def assay(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          env={**assay_env(), **env}, timeout=cli_timeout())


#: registries that are one half of a listed kind (read from the same entry-point group), not a kind of their own
HALVES = {"assay.spec.world_kinds:WORLD_DECLARATIONS": "world"}


def registries_in_source() -> set[str]:
    """Every module-level ``NAME = Registry(...)`` / ``NAME: Registry[...] = Registry(...)`` of src/assay
    (or of a subclass, ``...Registry(...)``)."""
    found = set()
    for path in (ROOT / "src" / "assay").rglob("*.py"):
        parts = list(path.relative_to(ROOT / "src").with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.parse(path.read_text()).body:
            value = getattr(node, "value", None)
            if isinstance(value, ast.Call) and getattr(value.func, "id", "").endswith("Registry"):
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target  # type: ignore[attr-defined]
                found.add(f"{module}:{target.id}")
    return found


def test_the_kind_list_names_every_registry_in_the_source() -> None:
    assert registries_in_source() - set(HALVES) == set(PLUGIN_KINDS.values())
    for ref, kind in HALVES.items():
        assert ref in registries_in_source()
        assert resolve(ref).group == registry_of(kind).group, ref


def test_listing_every_kind_as_json_and_as_a_table() -> None:
    r = assay("plugins", "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["kind"]: row for row in json.loads(r.stdout)}
    assert list(rows) == list(PLUGIN_KINDS)
    assert {"nop", "oracle", "reference", "pi"} <= set(rows["agent"]["builtin"])
    assert set(rows["sandbox"]["builtin"]) == {"host", "bwrap"} and rows["sandbox"]["group"] == "assay.sandboxes"
    assert set(rows["model"]["builtin"]) == {"scripted", "replay", "upstream", "local"}
    assert {"ledger", "tickets", "outbox", "user"} <= set(rows["world"]["builtin"])
    assert "file_exists" in rows["predicate"]["builtin"] and rows["predicate"]["builtin"] == rows["evaluator"]["builtin"]
    assert "langfuse" in rows["export"]["added"]  # assay's own entry point, listed beside the built-in file target
    table = assay("plugins", COLUMNS="200")
    assert table.returncode == 0
    for kind, row in rows.items():
        assert kind in table.stdout and row["group"] in table.stdout


def test_one_kind_and_one_plugin() -> None:
    r = assay("plugins", "world", "--json")
    assert [row["kind"] for row in json.loads(r.stdout)] == ["world"]
    r = assay("plugins", "sandbox", "host", "--json")
    assert json.loads(r.stdout) == {"kind": "sandbox", "name": "host", "registry": "sandbox backend",
                                    "group": "assay.sandboxes", "builtin": True,
                                    "object": "assay.sandbox.host:HostBackend"}


def test_a_registered_plugin_is_listed_as_added() -> None:
    code = ("from assay.worlds.registry import world\nfrom assay.worlds.outbox import Outbox\n"
            "@world('mail2')\nclass Mail2(Outbox):\n    pass\n"
            "from assay.cli.main import main\nmain(['plugins', 'world', '--json'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=assay_env(),
                       timeout=cli_timeout())
    assert json.loads(r.stdout)[0]["added"] == ["mail2"], r.stderr


def one_error_line(r: subprocess.CompletedProcess) -> str:
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    s = write_suite(tmp_path_factory.mktemp("plugins") / "s")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    return s


@pytest.mark.parametrize(("args", "kind", "name", "known", "group"), [
    (("run", "{suite}", "--agent", "ghost", "--sandbox", "host"), "agent", "ghost", "oracle", "assay.agents"),
    (("run", "{suite}", "--agent", "nop", "--sandbox", "nosuch"), "sandbox backend", "nosuch", "bwrap, host",
     "assay.sandboxes"),
    (("run", "{suite}", "--agent", "nop", "--sandbox", "host", "--model", "gpt9"), "gateway backend", "gpt9",
     "local, replay, scripted, upstream", "assay.gateway_backends"),
    (("plugins", "world", "castle"), "world", "castle", "ledger", "assay.worlds"),
    (("plugins", "predicate", "vibes"), "predicate kind", "vibes", "file_exists", "assay.predicates"),
    (("plugins", "export", "ftp"), "export target", "ftp", "file", "assay.export_targets"),
    (("plugins", "flavour"), "plug-in kind", "flavour", "agent, product, sandbox", ""),
])
def test_an_unknown_name_is_one_line_naming_kind_name_known_and_fix(suite: Path, args: tuple[str, ...], kind: str,
                                                                    name: str, known: str, group: str) -> None:
    line = one_error_line(assay(*(a.format(suite=suite) for a in args)))
    assert f"unknown {kind} {name!r}; known: " in line and known in line and "(fix: " in line, line
    assert group in line, line
