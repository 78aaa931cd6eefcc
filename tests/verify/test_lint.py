"""`assay lint`: the static pre-run check of what a task exposes to the agent. Each rule on a
task built to trip it (a future commit holding the fix, a readable answer key, a verifier
command found through a path the agent can write, tests in the workspace, a credential in the
prompt), and a clean task that trips none; a finding the task declares intended is no error."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from assay.spec.load import load_suite
from assay.verify.lint import lint_suite
from tests.conftest import cli_timeout, write_suite, write_task

CALC = {"calc.py": "def add(a, b):\n    return a - b\n"}
HIDDEN = {"tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5  # expected-value-7f3a\n"}
PYTEST = [{"id": "tests", "kind": "pytest"}]


def _task(root: Path, ws: dict[str, str] | None = None, **task: object) -> Path:
    s = write_suite(root)
    write_task(s, "calc", task={"category": "code", "predicates": PYTEST, **task}, workspace=ws or CALC, hidden=HIDDEN)
    return s


def _rules(suite: Path) -> list[str]:
    return sorted({f.rule for f in lint_suite(load_suite(suite)) if f.error})


def test_a_clean_task_has_no_finding(tmp_path: Path) -> None:
    assert _rules(_task(tmp_path / "s")) == []


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                   capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_future_commit_holding_the_fix_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s")
    ws = s / "tasks" / "calc" / "workspace"
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", ".")
    _git(ws, "commit", "-qm", "base")
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    _git(ws, "commit", "-qam", "the fix")
    _git(ws, "branch", "fix")
    _git(ws, "reset", "-q", "--hard", "HEAD~1")  # HEAD is the base; the fix stays reachable (branch, reflog)
    found = [f for f in lint_suite(load_suite(s)) if f.rule == "git_beyond_base"]
    assert found and any("fix" in f.detail or "reflog" in f.detail for f in found), found


def test_a_nested_git_folder_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s")
    (s / "tasks" / "calc" / "workspace" / "vendor" / ".git").mkdir(parents=True)
    assert "git_beyond_base" in _rules(s)


def test_a_readable_answer_key_is_found(tmp_path: Path) -> None:
    ws = {**CALC, "notes/answers.txt": "assert add(2, 3) == 5  # expected-value-7f3a\n"}
    assert "hidden_readable" in _rules(_task(tmp_path / "s", ws=ws))


def test_a_hidden_value_in_the_agents_environment_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", variants=[{"id": "v", "env": {"HINT": "assert add(2, 3) == 5  # expected-value-7f3a"}}])
    assert "hidden_readable" in _rules(s)


def test_a_verifier_program_the_agent_can_plant_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", predicates=[{"id": "run", "kind": "command", "cmd": "./run_tests.sh"}])
    assert "verifier_program_writable" in _rules(s)
    s2 = _task(tmp_path / "s2", predicates=[{"id": "run", "kind": "command", "cmd": "PATH=.:$PATH curl -s x"}])
    assert "verifier_program_writable" in _rules(s2)


def test_tests_in_the_workspace_are_found_unless_intended(tmp_path: Path) -> None:
    ws = {**CALC, "tests/test_calc.py": "def test_x():\n    pass\n"}
    assert "tests_in_workspace" in _rules(_task(tmp_path / "s", ws=ws))
    intended = _task(tmp_path / "s2", ws=ws, exposure_intended={"tests_in_workspace": "the agent runs them"})
    assert _rules(intended) == []
    [f] = [f for f in lint_suite(load_suite(intended)) if f.rule == "tests_in_workspace"]
    assert not f.error and f.intended == "the agent runs them"


def test_a_credential_in_the_prompt_is_found(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "calc", task={"category": "code", "predicates": PYTEST}, workspace=CALC, hidden=HIDDEN,
               prompt="Fix add. The gateway key is sk-assay-0123456789abcdef if you need it.")
    assert "credential_in_prompt" in _rules(s)


def test_an_unknown_intended_rule_is_refused(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", exposure_intended={"no_such_rule": "x"})
    assert "exposure_intended" in _rules(s)


def test_the_cli_and_the_run_refuse_a_suite_with_a_lint_error(tmp_path: Path) -> None:
    import sys

    from tests.conftest import assay_env
    ws = {**CALC, "tests/test_calc.py": "def test_x():\n    pass\n"}
    s = _task(tmp_path / "s", ws=ws)
    lint = subprocess.run([sys.executable, "-m", "assay.cli.main", "lint", str(s)], capture_output=True, text=True, env=assay_env(),
                          timeout=cli_timeout())
    assert lint.returncode == 1 and "tests_in_workspace" in lint.stdout, lint.stdout + lint.stderr
    run = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "nop", "--out", str(tmp_path / "r"),
                          "--sandbox", "host"], capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert run.returncode == 2 and "tests_in_workspace" in run.stdout + run.stderr, run.stdout + run.stderr
    assert not (tmp_path / "r").exists()  # refused before anything ran


def test_a_run_of_some_tasks_is_refused_only_for_their_own_lint_errors(tmp_path: Path) -> None:
    """`--task` picks what runs: a lint error in a task the run leaves out neither stops it nor is
    hidden from a run of that task (a real audit set: one task's baked answer stopped every run)."""
    from assay.errors import UsageError
    from assay.run import RunOptions, start_run

    s = _task(tmp_path / "s", ws={**CALC, "tests/test_calc.py": "def test_x():\n    pass\n"})
    write_task(s, "clean", task={"category": "code", "predicates": PYTEST}, workspace=CALC, hidden=HIDDEN)
    out = start_run(RunOptions(suite=s, agents=["nop"], out=tmp_path / "r1", sandbox="host", tasks=["clean"]))
    assert [r.task_id for r in out.results] == ["clean"]
    with pytest.raises(UsageError, match="tests_in_workspace"):
        start_run(RunOptions(suite=s, agents=["nop"], out=tmp_path / "r2", sandbox="host", tasks=["calc"]))
    with pytest.raises(UsageError, match="tests_in_workspace"):
        start_run(RunOptions(suite=s, agents=["nop"], out=tmp_path / "r3", sandbox="host"))
    assert not (tmp_path / "r2").exists() and not (tmp_path / "r3").exists()
