"""Verifier mutation testing: ``assay validate --mutants`` breaks the oracle's end state one
thing at a time and requires the verifier to notice every time."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from assay.run.validate import validate_suite
from assay.sandbox.host import HostBackend
from assay.spec import load_task
from assay.verify.mutants import OracleState, alter_text, try_mutants, world_mutants
from assay.records.verifier_inputs import VerifierInputs
from tests.conftest import ROOT, assay_env, cli_timeout, write_suite, write_task

SOLVE = "printf 'total: 42\\n' > out.txt\n"


def one_task_suite(tmp_path: Path, predicates: list[dict]) -> Path:
    s = write_suite(tmp_path / "suite")
    write_task(s, "answer", task={"category": "code", "budget": {"wall_time_s": 30}, "predicates": predicates},
               workspace={"notes.txt": "keep me\n"}, solution=SOLVE)
    return s


def test_a_verifier_that_only_checks_existence_is_caught(tmp_path: Path) -> None:
    suite = one_task_suite(tmp_path, [{"id": "exists", "kind": "file_exists", "path": "out.txt"}])
    report = validate_suite(suite, mutants=True)
    [v] = report.verdicts
    assert v.oracle and v.oracle.end_state.value == "pass" and v.nop and v.nop.end_state.value == "fail"
    assert not report.ok
    survived = {m.mutant: m.held for m in v.survivors}
    assert survived["truncate out.txt"] == ["exists"]
    assert survived["alter one value in out.txt"] == ["exists"]
    assert "delete out.txt" not in survived  # the one thing it does check
    assert any("mutant survived: truncate out.txt" in p and "exists" in p for p in v.problems)


def test_a_verifier_that_checks_the_value_and_side_effects_kills_every_mutant(tmp_path: Path) -> None:
    suite = one_task_suite(tmp_path, [
        {"id": "value", "kind": "file_equals", "path": "out.txt", "text": "total: 42"},
        {"id": "rest", "kind": "unchanged", "exclude": ["out.txt"]},
    ])
    report = validate_suite(suite, mutants=True)
    [v] = report.verdicts
    assert report.ok, v.problems
    names = sorted(m.mutant for m in v.mutants)
    assert names == ["alter one value in out.txt", "delete out.txt", "extra side effect: change untouched notes.txt",
                     "truncate out.txt"]
    assert v.trust == {"value": "state", "rest": "state"}


def test_cli_shows_trust_and_mutants_and_exits_1_on_a_survivor(tmp_path: Path) -> None:
    suite = one_task_suite(tmp_path, [{"id": "exists", "kind": "file_exists", "path": "out.txt"}])
    out = subprocess.run([sys.executable, "-m", "assay.cli.main", "validate", str(suite), "--mutants"], cwd=ROOT,
                         env=assay_env(), capture_output=True, text=True, timeout=cli_timeout())
    assert out.returncode == 1, out.stdout + out.stderr
    assert "state:1" in out.stdout and "1/4" in out.stdout
    assert "mutant survived: truncate out.txt" in out.stdout


def test_alter_text_changes_exactly_one_value() -> None:
    assert json.loads(alter_text('{"a": {"b": 1, "c": 2}}')) == {"a": {"b": 2, "c": 2}}
    assert alter_text('{"x": 1}\n{"x": 5}\n').splitlines()[1] == '{"x": 5}'
    assert alter_text("port = 8080\nhost = a\n") == "port = 8081\nhost = a\n"
    assert alter_text("abc\n") != "abc\n"


LEDGER_INITIAL = {"entries": {"e1": {"id": "e1", "amount": 10, "category": "food"}}}
LEDGER_FINAL = {"entries": {"e1": {"id": "e1", "amount": 10, "category": "food"},
                            "e2": {"id": "e2", "amount": 186, "category": "dining"}}}


def world_state(tmp_path: Path, predicates: list[dict]) -> OracleState:
    s = write_suite(tmp_path / "suite")
    task = load_task(write_task(s, "w", task={"category": "code", "predicates": predicates,
                                              "worlds": {"ledger": {"categories": ["food", "dining"]}}}))
    work = tmp_path / "work"
    work.mkdir()
    from assay.worlds.base import diff_states

    extra = {"worlds": {"ledger": {"initial": LEDGER_INITIAL, "final": LEDGER_FINAL,
                                   "diff": diff_states(LEDGER_INITIAL, LEDGER_FINAL)}}}
    return OracleState(task, work, {}, VerifierInputs(**extra), [])


def test_world_mutants_delete_alter_swap_and_duplicate_rows(tmp_path: Path) -> None:
    exact = [{"id": "diff", "kind": "world_diff", "world": "ledger", "exact": True, "changes": [
        {"table": "entries", "op": "added", "match": {"amount": 186, "category": "dining"}}]}]
    state = world_state(tmp_path / "strong", exact)
    names = [m.name for m in world_mutants(state)]
    assert names == ["ledger.entries: delete added row e2", "ledger.entries: alter one value of row e2",
                     "ledger.entries: swap row e2 for row e1", "ledger.entries: extra side effect (row e2 twice)"]
    results = asyncio.run(try_mutants(state, "base", HostBackend()))
    assert len(results) == 4 and not any(r.survived for r in results)
    weak = [{"id": "rows", "kind": "world_rows", "world": "ledger", "table": "entries", "where": {"amount": 186}}]
    results = asyncio.run(try_mutants(world_state(tmp_path / "weak", weak), "base", HostBackend()))
    assert {r.mutant for r in results if r.survived} == {"ledger.entries: extra side effect (row e2 twice)"}
