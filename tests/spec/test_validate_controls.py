"""``assay validate --controls``: every derived control is proven impossible by a run (the oracle
and the do-nothing agent both fail it), the tasks no rule fits are listed with the reason, and a
suite with no control at all does not pass (a check of nothing is not a pass)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.run.validate_controls import validate_controls
from assay.spec.controls import control_token, derive_controls
from assay.spec.load import load_suite
from tests.conftest import assay_env, cli_timeout, write_suite, write_task


def _suite(tmp: Path) -> Path:
    s = write_suite(tmp / "suite")
    write_task(s, "greet", task={"category": "code", "predicates": [
        {"id": "greeting", "kind": "file_equals", "path": "out.txt", "text": "hello, world"},
        {"id": "counted", "kind": "json_value", "path": "n.json", "expect": {"/n": 3}, "required": False}]},
        prompt="Write `hello, world` into out.txt.", solution="echo 'hello, world' > out.txt\n")
    write_task(s, "fix", task={"category": "code", "predicates": [{"id": "tests", "kind": "pytest"}]},
               workspace={"calc.py": "def add(a, b):\n    return a - b\n"},
               hidden={"tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"},
               solution="sed -i 's/a - b/a + b/' calc.py\n")
    return s


def test_each_control_records_its_rule_and_is_in_nothing_the_agent_sees(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))
    cs = derive_controls(suite, tmp_path / "controls")
    got = {(c.of, c.rule): c for c in cs.controls}
    swap = got[("greet", "check-contradicts-instruction")]
    token = control_token(suite.task("greet"))
    assert "'hello, world'" in swap.changed and token in swap.changed
    [p] = [p for p in swap.task.spec.predicates if p.id == "greeting"]
    assert p.text == token and token not in swap.task.prompt  # type: ignore[attr-defined]
    unreach = got[("greet", "unreachable-state")]
    assert {p.kind for p in unreach.task.spec.predicates if p.required} == {"file_equals", "file_absent"}
    failing = got[("fix", "unreachable-state")]
    assert (failing.task.dir / "hidden/tests/test_assay_control.py").is_file()
    assert not (suite.task("fix").dir / "hidden/tests/test_assay_control.py").exists()  # the task is untouched
    [nd] = cs.not_derived
    assert (nd.task_id, nd.rule) == ("fix", "check-contradicts-instruction") and "pytest" in nd.reason
    again = derive_controls(suite, tmp_path / "again")  # a resume derives the same controls
    assert [c.task.digest for c in again.controls] == [c.task.digest for c in cs.controls]


def test_validate_proves_every_control_impossible(tmp_path: Path) -> None:
    rep = validate_controls(_suite(tmp_path), sandbox="host")
    assert rep.ok, [(v.control_id, v.problems) for v in rep.verdicts]
    assert {(v.of, v.rule) for v in rep.verdicts} == {("greet", "check-contradicts-instruction"),
                                                     ("greet", "unreachable-state"), ("fix", "unreachable-state")}
    for v in rep.verdicts:
        assert v.oracle is not None and v.oracle.end_state.value == "fail", v.control_id
        assert v.nop is not None and v.nop.end_state.value == "fail", v.control_id


def test_cli_lists_what_was_not_derived_and_fails_on_nothing(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "bare")
    write_task(s, "judged-by-code", task={"category": "code", "predicates": [
        {"id": "check", "kind": "python", "file": "check.py"}]}, verify={"check.py": "def check(ctx):\n    return True\n"},
        solution="true\n")
    cli = subprocess.run([sys.executable, "-m", "assay.cli.main", "validate", str(s), "--sandbox", "host",
                          "--controls", "--json"], capture_output=True, text=True, env=assay_env(),
                          timeout=cli_timeout())
    doc = json.loads(cli.stdout)
    assert cli.returncode == 1 and doc["controls"]["ok"] is False and doc["controls"]["controls"] == []
    assert {(n["task"], n["rule"]) for n in doc["controls"]["not_derived"]} == {
        ("judged-by-code", "check-contradicts-instruction"), ("judged-by-code", "unreachable-state")}


def test_world_and_call_checks_get_a_contradicting_check(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "w")
    world = {"world": "ledger", "table": "entries"}
    ledger = {"ledger": {"categories": ["dining"]}}  # a predicate over an undeclared world is refused at load
    write_task(s, "rows", task={"category": "code", "worlds": ledger, "predicates": [
        {"id": "booked", "kind": "world_rows", **world, "where": {"memo": "dinner"}}]}, solution="true\n")
    write_task(s, "diff", task={"category": "code", "worlds": ledger, "predicates": [
        {"id": "added", "kind": "world_diff", "world": "ledger",
         "changes": [{"table": "entries", "op": "added", "match": {"memo": "lunch"}}]}]}, solution="true\n")
    write_task(s, "call", task={"category": "code", "predicates": [
        {"id": "asked", "kind": "tool_called", "tool": "user.ask_clarification"}]}, solution="true\n")
    got = {c.of: c.task.spec.predicates[-1] for c in derive_controls(load_suite(s), tmp_path / "c").controls}
    assert (got["rows"].kind, got["rows"].count, dict(got["rows"].where)) == ("world_rows", 0, {"memo": "dinner"})  # type: ignore[attr-defined]
    assert (got["diff"].kind, got["diff"].count, dict(got["diff"].where)) == ("world_rows", 0, {"memo": "lunch"})  # type: ignore[attr-defined]
    assert (got["call"].kind, got["call"].tool) == ("tool_not_called", "user.ask_clarification")  # type: ignore[attr-defined]
