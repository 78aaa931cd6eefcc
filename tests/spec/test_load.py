"""Loading suites: every problem names the file, the field and a fix; nothing is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import SpecError
from assay.spec import load_suite
from tests.conftest import assay_env, cli_timeout, write_suite, write_task

GOOD = {"category": "code", "predicates": [{"id": "a", "kind": "file_exists", "path": "a.txt"}]}


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_suite(path)
    return [p.render() for p in info.value.problems]


def test_good_suite_loads_with_digests(calc_suite: Path) -> None:
    suite = load_suite(calc_suite)
    task = suite.task("calc")
    assert task.spec.category == "code"
    assert "hidden/tests/test_calc.py" in task.file_digests
    assert len(suite.digest) == 64
    (calc_suite / "tasks" / "calc" / "hidden" / "tests" / "test_calc.py").write_text("changed")
    assert load_suite(calc_suite).digest != suite.digest


def test_missing_suite_file(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    [msg] = problems(tmp_path / "s")
    assert "suite.yaml" in msg and "file not found" in msg and "fix:" in msg


def test_invalid_yaml_names_line(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    (s / "suite.yaml").write_text("name: x\ncategories: [\n")
    [msg] = problems(s)
    assert "suite.yaml" in msg and "line" in msg and "not valid YAML" in msg


def test_unknown_field_and_bad_predicate_kind_reported_together(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={**GOOD, "budjet": {"wall_time_s": 5}})
    write_task(s, "two", task={"category": "code", "predicates": [{"id": "x", "kind": "file_exist", "path": "a"}]})
    msgs = problems(s)
    assert any("one/task.yaml: budjet: unknown field" in m and "fix: remove this field" in m for m in msgs)
    assert any("two/task.yaml: predicates.0" in m and "file_exists" in m for m in msgs), msgs


def test_undeclared_category_and_missing_prompt(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    d = write_task(s, "one", task={**GOOD, "category": "nope"})
    (d / "prompt.md").unlink()
    msgs = problems(s)
    assert any("category 'nope' is not declared" in m and "fix:" in m for m in msgs)
    assert any("prompt_file" in m and "not found" in m for m in msgs)


def test_duplicate_predicate_ids_and_escaping_paths(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "dup", task={"category": "code", "predicates": [
        {"id": "a", "kind": "file_exists", "path": "x"}, {"id": "a", "kind": "file_absent", "path": "y"}]})
    write_task(s, "esc", task={**GOOD, "setup": "../../etc/passwd"})
    msgs = problems(s)
    assert any("predicate id 'a' appears twice" in m for m in msgs)
    assert any("esc/task.yaml: setup: path '../../etc/passwd' leaves the task folder" in m for m in msgs)


def test_wrong_types_give_fix(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={**GOOD, "budget": {"wall_time_s": "soon"}})
    [msg] = problems(s)
    assert "budget.wall_time_s" in msg and "fix: use a number" in msg


def test_suite_default_budget_applies_unless_task_sets_it(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s", default_budget={"wall_time_s": 7, "turns": 3})
    write_task(s, "a", task=GOOD)
    write_task(s, "b", task={**GOOD, "budget": {"wall_time_s": 9}})
    suite = load_suite(s)
    assert suite.task("a").spec.budget.wall_time_s == 7 and suite.task("a").spec.budget.turns == 3
    assert suite.task("b").spec.budget.wall_time_s == 9 and suite.task("b").spec.budget.turns == 3


def test_cli_malformed_suite_exit_2_no_traceback_nothing_written(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"category": "code", "predicates": []})
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "nop", "--sandbox", "host",
                           "--out", str(out)], capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "one/task.yaml: predicates" in proc.stderr and "fix:" in proc.stderr
    assert not out.exists()


def test_schema_command_prints_valid_json_schema() -> None:
    import json

    import jsonschema

    proc = subprocess.run([sys.executable, "-m", "assay.cli.main", "schema", "task"], capture_output=True, text=True,
                          env=assay_env(), timeout=cli_timeout())
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    v = jsonschema.Draft202012Validator(schema)
    assert not list(v.iter_errors(GOOD))
    assert list(v.iter_errors({"category": "c", "predicates": [{"id": "x", "kind": "nope"}]}))
    kinds = set(schema["properties"]["predicates"]["items"]["discriminator"]["mapping"])
    assert {"file_exists", "pytest", "python", "json_schema", "unchanged", "command"} <= kinds
