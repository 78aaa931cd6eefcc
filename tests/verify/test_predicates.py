"""Each predicate kind reads the final snapshot and says what it read; hostile workspaces
(symlinks out, shadowing files) never produce a pass; verifier crashes are infra errors."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from assay.errors import VerifierError
from assay.sandbox.host import HostBackend
from assay.spec import load_task
from assay.spec.digest import tree_digests
from assay.verify import run_verifier
from tests.conftest import write_suite, write_task


def verify(tmp_path: Path, predicates: list[dict[str, Any]], final: dict[str, str] | None = None, *,
           initial: dict[str, str] | None = None, hidden: dict[str, str] | None = None,
           verify_code: dict[str, str] | None = None, mutate=None, **task: Any):
    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "code", "predicates": predicates, **task},
                   workspace=initial or {}, hidden=hidden, verify=verify_code)
    spec = load_task(d)
    ws = tmp_path / "final"
    ws.mkdir()
    for rel, content in (initial or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    start = tree_digests(ws)
    for rel, content in (final or {}).items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    if mutate:
        mutate(ws)
    return asyncio.run(run_verifier(spec, ws, tmp_path / "verify", initial_digests=start, events=[],
                                    backend=HostBackend()))


def by_id(report) -> dict[str, Any]:
    return {p.id: p for p in report.predicates}


def test_file_predicates(tmp_path: Path) -> None:
    r = verify(tmp_path, [
        {"id": "exists", "kind": "file_exists", "path": "out.txt"},
        {"id": "absent", "kind": "file_absent", "path": "tmp.txt"},
        {"id": "eq", "kind": "file_equals", "path": "out.txt", "text": "hello world"},
        {"id": "eqf", "kind": "file_equals", "path": "out.txt", "expected_file": "expected.txt"},
        {"id": "has", "kind": "file_contains", "path": "out.txt", "text": ["hello", "moon"]},
        {"id": "re", "kind": "file_matches", "path": "out.txt", "regex": r"^hello\s+w"},
        {"id": "dig", "kind": "file_digest", "path": "out.txt",
         "sha256": "a948904f2f0f479b8f8197694b30184b0d2ed1c1cd2a1ec0fb85d299a192a447"},
    ], {"out.txt": "hello world"}, hidden={"expected.txt": "hello world\n"})
    p = by_id(r)
    assert p["exists"].passed and p["absent"].passed and p["eq"].passed and p["eqf"].passed and p["re"].passed
    assert not p["has"].passed and p["has"].evidence["missing"] == ["moon"]
    assert not p["dig"].passed and p["dig"].evidence["sha256"] != p["dig"].evidence["expected_sha256"]
    assert not r.held
    assert r.diagnostic_score == pytest.approx(100 * 5 / 7, rel=1e-3)


def test_missing_file_fails_with_evidence(tmp_path: Path) -> None:
    r = verify(tmp_path, [{"id": "eq", "kind": "file_equals", "path": "nope.txt", "text": "x"}])
    assert not r.held and r.predicates[0].evidence == {"path": "nope.txt", "exists": False}


def test_unchanged_detects_modify_add_remove(tmp_path: Path) -> None:
    def mutate(ws: Path) -> None:
        (ws / "b.txt").unlink()

    r = verify(tmp_path, [
        {"id": "all", "kind": "unchanged"},
        {"id": "only_c", "kind": "unchanged", "paths": ["c/*"]},
        {"id": "excl", "kind": "unchanged", "exclude": ["a.txt", "new.txt", "b.txt"]},
    ], {"a.txt": "changed", "new.txt": "x"}, initial={"a.txt": "a", "b.txt": "b", "c/d.txt": "d"}, mutate=mutate)
    p = by_id(r)
    assert not p["all"].passed
    assert p["all"].evidence["modified"] == ["a.txt"] and p["all"].evidence["added"] == ["new.txt"]
    assert p["all"].evidence["removed"] == ["b.txt"]
    assert p["only_c"].passed and p["excl"].passed


def test_json_schema_and_values(tmp_path: Path) -> None:
    schema = {"type": "object", "required": ["total", "items"], "properties": {"total": {"type": "number"}}}
    r = verify(tmp_path, [
        {"id": "schema", "kind": "json_schema", "path": "out.json", "schema": schema},
        {"id": "schema_file", "kind": "json_schema", "path": "bad.json", "schema_file": "schema.json"},
        {"id": "values", "kind": "json_value", "path": "out.json", "expect": {"/total": 10.0, "/items/1/name": "b"},
         "tolerance": 0.01},
        {"id": "wrong", "kind": "json_value", "path": "out.json", "expect": {"/total": 11, "/missing": 1}},
    ], {"out.json": json.dumps({"total": 10.004, "items": [{"name": "a"}, {"name": "b"}]}), "bad.json": "{not json"},
        hidden={"schema.json": json.dumps(schema)})
    p = by_id(r)
    assert p["schema"].passed and p["values"].passed
    assert not p["schema_file"].passed and "json_error" in p["schema_file"].evidence
    assert not p["wrong"].passed and sorted(p["wrong"].evidence["wrong"]) == ["/missing", "/total"]


def test_command_and_pytest(tmp_path: Path) -> None:
    r = verify(tmp_path, [
        {"id": "cmd", "kind": "command", "cmd": "python3 main.py", "stdout_contains": "42"},
        {"id": "cmd_exit", "kind": "command", "cmd": ["/bin/sh", "-c", "exit 3"], "expect_exit": 0},
        {"id": "tests", "kind": "pytest", "min_tests": 2},
    ], {"main.py": "print(6 * 7)\n", "lib.py": "def f():\n    return 1\n"},
        hidden={"tests/test_lib.py": "from lib import f\n\ndef test_a():\n    assert f() == 1\n\ndef test_b():\n    assert f() + 1 == 2\n"})
    p = by_id(r)
    assert p["cmd"].passed and p["cmd"].evidence["exit_code"] == 0
    assert not p["cmd_exit"].passed and p["cmd_exit"].evidence["exit_code"] == 3
    assert p["tests"].passed and p["tests"].evidence["passed"] == 2 and p["tests"].trust == "in_process"


def test_pytest_min_tests_guards_against_empty_collection(tmp_path: Path) -> None:
    r = verify(tmp_path, [{"id": "tests", "kind": "pytest", "min_tests": 3}], {"lib.py": "x = 1\n"},
               hidden={"tests/test_lib.py": "def test_a():\n    pass\n"})
    assert not r.held and r.predicates[0].evidence["reported"] == 1


@pytest.mark.parametrize("shadow", [
    {"pytest.py": "import sys\nsys.exit(0)\n"},  # replaces pytest itself
    {"conftest.py": "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_call(item):\n    pass\n"},
    {"tests/test_calc.py": "def test_ok():\n    pass\n"},  # replaces the hidden test file by name
    {"sitecustomize.py": "import os\nos._exit(0)\n"},
])
def test_workspace_files_cannot_shadow_hidden_tests(tmp_path: Path, shadow: dict[str, str]) -> None:
    final = {"calc.py": "def add(a, b):\n    return a - b\n", **shadow}
    r = verify(tmp_path, [{"id": "tests", "kind": "pytest"}], final,
               hidden={"tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"})
    assert not r.held, r.predicates[0].evidence


def test_symlink_out_of_workspace_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("the answer")

    def mutate(ws: Path) -> None:
        os.symlink(secret, ws / "answer.txt")
        os.symlink(tmp_path, ws / "up")

    r = verify(tmp_path, [
        {"id": "eq", "kind": "file_equals", "path": "answer.txt", "text": "the answer"},
        {"id": "exists", "kind": "file_exists", "path": "up/outside.txt"},
        {"id": "has", "kind": "file_contains", "path": "answer.txt", "text": "answer"},
    ], mutate=mutate)
    for p in r.predicates:
        assert not p.passed and "escape" in p.evidence, p
    assert (tmp_path / "verify" / "work" / "answer.txt").is_symlink()


def test_python_plugin_predicate(tmp_path: Path) -> None:
    code = {"check.py": """
        def check(ctx):
            text = ctx.read_text("out.txt")
            return text.count("x") == ctx.args["n"], {"count": text.count("x")}
    """}
    r = verify(tmp_path, [{"id": "plug", "kind": "python", "file": "check.py", "args": {"n": 3}}], {"out.txt": "xxx"},
               verify_code=code)
    assert r.held and r.predicates[0].evidence == {"count": 3}


def test_plugin_crash_is_verifier_error_not_pass(tmp_path: Path) -> None:
    code = {"check.py": "def check(ctx):\n    raise RuntimeError('broken verifier')\n"}
    with pytest.raises(VerifierError) as info:
        verify(tmp_path, [{"id": "plug", "kind": "python", "file": "check.py"}], {"out.txt": "x"}, verify_code=code)
    assert "broken verifier" in str(info.value) and info.value.reason == "verifier_crash"


def test_plugin_returning_non_bool_is_verifier_error(tmp_path: Path) -> None:
    code = {"check.py": "def check(ctx):\n    return 'yes'\n"}
    with pytest.raises(VerifierError):
        verify(tmp_path, [{"id": "plug", "kind": "python", "file": "check.py"}], {}, verify_code=code)


def test_code_under_test_hanging_is_a_fail_not_infra(tmp_path: Path) -> None:
    """A hang in a code-executing predicate is the code under test's doing: never infra_error."""
    r = verify(tmp_path, [{"id": "slow", "kind": "command", "cmd": "sleep 30", "timeout_s": 0.5}], {})
    assert not r.held and r.predicates[0].evidence["timed_out"] is True


def test_verifier_timeout_is_verifier_error(tmp_path: Path) -> None:
    with pytest.raises(VerifierError) as info:
        verify(tmp_path, [{"id": "slow", "kind": "command", "cmd": "sleep 30", "timeout_s": 20}], {},
               verifier_timeout_s=1)
    assert info.value.reason == "verifier_timeout"


def test_fifo_in_workspace_does_not_hang_the_copy(tmp_path: Path) -> None:
    r = verify(tmp_path, [{"id": "e", "kind": "file_exists", "path": "a.txt"}], {"a.txt": "x"},
               mutate=lambda ws: os.mkfifo(ws / "pipe"))
    assert r.held and r.skipped_entries == ["pipe"]


def test_missing_pytest_in_the_verifier_is_infra_not_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verifier that cannot run its tests must not call the agent's work a failure."""
    import sys

    fake = tmp_path / "python-without-pytest"
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.modules['pytest'] = None\n"
                    "from assay.verify.pytest_runner import main\nsys.exit(main(sys.argv[4:]))\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))  # the verifier's interpreter (VerifyContext.python)
    with pytest.raises(VerifierError) as info:
        verify(tmp_path, [{"id": "tests", "kind": "pytest"}], {"lib.py": "x = 1\n"},
               hidden={"tests/test_lib.py": "def test_a():\n    pass\n"})
    assert info.value.reason == "verifier_setup" and "pytest is not importable" in str(info.value)
