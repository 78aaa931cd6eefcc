"""Every file the user gives is checked when it is read: one line naming the file, the line, the
field and the fix (issue 28, "Bad configuration is the user's error, never the agent's")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from assay.errors import SpecError
from assay.gateway.config import faults_setting, prices_setting
from assay.spec.user_file import read_user_yaml
from assay.variants.rules import load_rules
from tests.conftest import assay_env, cli_timeout


def one_problem(e: pytest.ExceptionInfo[SpecError]) -> str:
    assert len(e.value.problems) == 1, e.value.problems
    line = e.value.problems[0].render()
    assert "\n" not in line
    return line


@pytest.mark.parametrize("table, field", [
    ({"m": {"input": -1.0, "output": 2.0}}, "m.input"),          # negative: --max-cost could never bind
    ({"m": {"inptu": 1.0, "output": 2.0}}, "m.inptu"),           # a typo would price input at zero
    ({"m": {"input": "cheap", "output": 2.0}}, "m.input"),       # a non-number broke every model call
    ({"m": {"input": float("nan"), "output": 2.0}}, "m.input"),
])
def test_a_bad_price_table_is_refused_naming_file_line_and_field(tmp_path: Path, table: dict, field: str) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text(yaml.safe_dump(table, sort_keys=False))
    with pytest.raises(SpecError) as e:
        prices_setting({}, f)
    line = one_problem(e)
    assert str(f) in line and field in line and "line 2" in line and "fix:" in line


def test_a_good_price_table_is_bound_as_numbers(tmp_path: Path) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text("m: {input: '1.5', output: 3}\n'*': {input: 0, output: 0, cached: 0}\n")
    assert prices_setting({}, f) == {"m": {"input": 1.5, "output": 3.0}, "*": {"input": 0.0, "output": 0.0, "cached": 0.0}}


def test_a_faults_file_error_names_the_file_not_an_environment_variable(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_GATEWAY_FAULTS", raising=False)
    f = tmp_path / "faults.yaml"
    f.write_text("- kind: rate_limit\n  on_call: 1\n- kind: meteor\n")
    with pytest.raises(SpecError) as e:
        faults_setting(f)
    msg = str(e.value)
    assert str(f) in msg and "ASSAY_GATEWAY_FAULTS" not in msg and "line 3" in msg and "kind" in msg
    with pytest.raises(SpecError) as e:
        faults_setting(tmp_path / "missing.yaml")
    assert "missing.yaml" in one_problem(e) and "ASSAY_GATEWAY_FAULTS" not in str(e.value)


@pytest.mark.parametrize("name", ["faults.yaml", "prices.yaml", "rules.yaml"])
def test_a_yaml_syntax_error_is_one_line_with_file_and_line(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_text("a: 1\nb: [unclosed\nc: 3\n")
    readers = {"faults.yaml": lambda: faults_setting(f), "prices.yaml": lambda: prices_setting({}, f),
               "rules.yaml": lambda: load_rules(f)}
    with pytest.raises(SpecError) as e:
        readers[name]()
    line = one_problem(e)
    assert str(f) in line and "line " in line and "not valid YAML" in line and "fix the YAML syntax" in line
    assert "^" not in line  # not PyYAML's mark drawing


def test_a_typod_variant_step_is_one_error_not_one_per_step_kind(tmp_path: Path) -> None:
    f = tmp_path / "rules.yaml"
    f.write_text("rules:\n  - id: r1\n    steps:\n      - drop_word: [dinner]\n")
    with pytest.raises(SpecError) as e:
        load_rules(f)
    line = one_problem(e)
    assert "rules.0.steps.0" in line and "line 4" in line and "drop_words" in line and str(f) in line


def test_a_field_error_inside_a_step_is_still_one_line(tmp_path: Path) -> None:
    f = tmp_path / "rules.yaml"
    f.write_text("rules:\n  - id: r1\n    steps:\n      - number_format: roman\n")
    with pytest.raises(SpecError) as e:
        load_rules(f)
    assert "number_format" in one_problem(e)


def test_an_unknown_task_in_a_rules_file_names_the_file(tmp_path: Path) -> None:
    f = tmp_path / "rules.yaml"
    f.write_text("rules:\n  - id: r1\n    steps: [{reorder_clauses: true}]\n    tasks: [nope]\n")
    err = load_rules(f).unknown_tasks({"a"})
    assert err is not None
    line = err.problems[0].render()
    assert str(f) in line and "rules.0.tasks" in line and "line 4" in line and "'nope'" in line


def test_the_reader_names_a_directory_and_bad_bytes(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a file"):
        read_user_yaml(tmp_path, what="prices file", fix="x")
    f = tmp_path / "bin.yaml"
    f.write_bytes(b"a: \xff\n")
    with pytest.raises(SpecError, match="UTF-8"):
        read_user_yaml(f, what="prices file", fix="x")


def test_cli_bad_prices_exit_2_one_line_nothing_written(calc_suite: Path, tmp_path: Path) -> None:
    f = tmp_path / "prices.yaml"
    f.write_text("assay-scripted: {inptu: 1.0, output: 2.0}\n")
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(calc_suite), "--agent", "nop", "--sandbox",
                        "host", "--model", "scripted", "--prices", str(f), "--out", str(out)],
                       capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(f) in lines[0] and "inptu" in lines[0] and "Traceback" not in r.stderr
    assert not out.exists()
