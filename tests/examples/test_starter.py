"""The starter example suite (issue 2): its shape, and that every task is valid.

Valid means: the reference solution (oracle) passes, the do-nothing agent (nop) fails, and the
task's scripted model (model.yaml, replayed tool call by tool call) also passes: the verifier
alone decides all three.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.records.results import AttemptResult, EndState
from assay.run import RunOptions, start_run
from assay.spec.budget import Risk
from assay.spec.load import LoadedSuite, load_suite

HERE = Path(__file__).resolve().parent
SUITE = HERE.parents[1] / "examples" / "starter"
REPLAY_AGENT = "model-script-replay"

_spec = importlib.util.spec_from_file_location("replay_model_script", HERE / "replay_model_script.py")
assert _spec is not None and _spec.loader is not None
replayer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(replayer)


@pytest.fixture(scope="module")
def suite() -> LoadedSuite:
    return load_suite(SUITE)


# ------------------------------------------------------------------------------ shape
def test_suite_has_enough_tasks_over_enough_categories(suite: LoadedSuite) -> None:
    assert len(suite.tasks) >= 12
    used = {t.spec.category for t in suite.tasks}
    declared = {c.id for c in suite.spec.categories}
    assert used == declared, "every declared category has tasks, every task's category is declared"
    assert {"code", "files_ops", "data", "diagnosis"} <= used
    for cat in declared:
        assert sum(t.spec.category == cat for t in suite.tasks) >= 2, cat


def test_suite_uses_every_builtin_predicate_kind(suite: LoadedSuite) -> None:
    kinds = {p.kind for t in suite.tasks for p in t.spec.predicates}  # type: ignore[attr-defined]
    assert {"pytest", "file_exists", "file_absent", "file_equals", "file_contains", "file_matches", "file_digest",
            "unchanged", "json_schema", "json_value", "command", "python"} <= kinds


def test_suite_exercises_setup_variants_and_weighted_predicates(suite: LoadedSuite) -> None:
    assert any(t.spec.setup for t in suite.tasks)
    assert any(t.spec.variants for t in suite.tasks)
    weighted = [t.id for t in suite.tasks if any(not p.required for p in t.spec.predicates)]
    assert len(weighted) >= 3
    for t in suite.tasks:
        assert any(p.required for p in t.spec.predicates), f"{t.id}: a strict pass needs a required predicate"
        assert 60 <= t.spec.budget.wall_time_s <= 120, t.id


def test_every_task_ships_a_solution_and_a_model_script(suite: LoadedSuite) -> None:
    for t in suite.tasks:
        sol = t.path(t.spec.solution)
        assert sol is not None and sol.is_file(), t.id
        assert t.spec.model_script, t.id
        turns = replayer.load_turns(t.dir / t.spec.model_script)
        for turn in turns:
            for call in turn.get("tool_calls") or []:
                assert call["name"] in t.spec.tools, (t.id, call["name"])


def test_hidden_files_cannot_be_shadowed_from_the_workspace(suite: LoadedSuite) -> None:
    """Nothing in a workspace has the name of a hidden file or folder (law 2)."""
    for t in suite.tasks:
        hidden = t.dir / t.spec.hidden
        ws = t.dir / t.spec.workspace
        if not hidden.is_dir():
            continue
        hidden_names = {p.name for p in hidden.rglob("*")}
        ws_names = {p.name for p in ws.rglob("*")} if ws.is_dir() else set()
        assert not hidden_names & ws_names, (t.id, sorted(hidden_names & ws_names))


def test_read_only_tasks_require_an_answer_and_an_untouched_workspace(suite: LoadedSuite) -> None:
    read_only = [t for t in suite.tasks if t.spec.risk is Risk.read_only]
    assert len(read_only) >= 2
    for t in read_only:
        unchanged = [p for p in t.spec.predicates if p.kind == "unchanged"]  # type: ignore[attr-defined]
        assert any(p.required and p.paths == ["**"] and p.exclude == ["answer.txt"] for p in unchanged), t.id
        on_answer = [p for p in t.spec.predicates if getattr(p, "path", None) == "answer.txt" and p.required]
        assert on_answer, f"{t.id}: nop must fail, so the answer file must be required"


# ------------------------------------------------------------------------------ the replayer's own failure paths
def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("x = 1\nx = 1\n")
    return ws


def _model(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "model.yaml"
    p.write_text(text)
    return p


def test_replayer_refuses_an_edit_that_is_not_unique(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = _model(tmp_path, "turns:\n  - tool_calls: [{name: edit, arguments: {path: a.txt, old: 'x = 1', new: 'x = 2'}}]\n"
                         "  - text: done\n")
    assert replayer.main(["--model", str(m), "--workspace", str(ws)]) == 3
    assert (ws / "a.txt").read_text() == "x = 1\nx = 1\n"


def test_replayer_refuses_paths_outside_the_workspace(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = _model(tmp_path, "turns:\n  - tool_calls: [{name: write, arguments: {path: ../escaped.txt, content: hi}}]\n"
                         "  - text: done\n")
    assert replayer.main(["--model", str(m), "--workspace", str(ws)]) == 3
    assert not (tmp_path / "escaped.txt").exists()


@pytest.mark.parametrize("body", [
    "turns:\n  - tool_calls: [{name: shell, arguments: {command: 'true'}}]\n",          # never ends with text
    "turns:\n  - text: early\n  - tool_calls: [{name: shell, arguments: {command: 'true'}}]\n  - text: x\n",
    "turns: []\n",
    "turns:\n  - tool_calls: [{name: ledger.record_entry, arguments: {}}]\n  - text: done\n",  # not allowed here
    "turns:\n  - tool_calls: [{name: write, arguments: {path: b.txt}}]\n  - text: done\n",    # missing content
])
def test_replayer_refuses_malformed_scripts(tmp_path: Path, body: str) -> None:
    ws = _ws(tmp_path)
    assert replayer.main(["--model", str(_model(tmp_path, body)), "--workspace", str(ws)]) == 3
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]


def test_replayer_plays_every_tool_in_order(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    m = _model(tmp_path, """turns:
  - tool_calls:
      - {name: write, arguments: {path: sub/b.txt, content: "one\\n"}}
      - {name: edit, arguments: {path: sub/b.txt, old: one, new: two}}
      - {name: shell, arguments: {command: "cat sub/b.txt > c.txt"}}
      - {name: read, arguments: {path: c.txt}}
      - {name: list, arguments: {path: sub}}
  - text: finished
""")
    assert replayer.main(["--model", str(m), "--workspace", str(ws)]) == 0
    assert (ws / "c.txt").read_text() == "two\n"


# ------------------------------------------------------------------------------ the suite, run for real
@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> list[AttemptResult]:
    tmp = tmp_path_factory.mktemp("starter")
    agent_file = tmp / "replay-agent.yaml"
    agent_file.write_text((HERE / "replay-agent.yaml").read_text()
                          .replace("@PYTHON@", sys.executable).replace("@HERE@", str(HERE))
                          .replace("@SUITE@", str(SUITE)))
    out = start_run(RunOptions(suite=SUITE, agents=["oracle", "nop", str(agent_file)], out=tmp / "run",
                               sandbox="host", jobs=4, max_retries=0))
    return out.results


def _by_agent(results: list[AttemptResult], agent: str) -> list[AttemptResult]:
    return [r for r in results if r.agent == agent]


def _explain(r: AttemptResult) -> str:
    failed = [(p.id, p.evidence) for p in r.predicates if not p.passed]
    return f"{r.trial_id}: {r.end_state.value} ({r.reason}) errors={r.errors} failed={failed}"


@pytest.mark.slow
def test_every_planned_trial_ran_once(suite: LoadedSuite, results: list[AttemptResult]) -> None:
    per_agent = sum(len(t.spec.variant_ids()) for t in suite.tasks)
    assert len(results) == 3 * per_agent
    assert len({r.trial_id for r in results}) == len(results)


@pytest.mark.slow
def test_oracle_passes_every_task_with_every_predicate(results: list[AttemptResult]) -> None:
    for r in _by_agent(results, "oracle"):
        assert r.end_state is EndState.passed, _explain(r)
        assert r.diagnostic_score == 100.0, _explain(r)


@pytest.mark.slow
def test_nop_fails_every_task(results: list[AttemptResult]) -> None:
    for r in _by_agent(results, "nop"):
        assert r.end_state is EndState.failed, _explain(r)  # a verifier "no", never an infra error
        assert r.diagnostic_score < 100.0


@pytest.mark.slow
def test_model_scripts_replay_to_a_pass(results: list[AttemptResult]) -> None:
    replayed = _by_agent(results, REPLAY_AGENT)
    assert replayed
    for r in replayed:
        assert r.agent_exit_code == 0, _explain(r)
        assert r.end_state is EndState.passed, _explain(r)


@pytest.mark.slow
def test_read_only_tasks_are_left_untouched_but_for_the_answer(suite: LoadedSuite,
                                                               results: list[AttemptResult]) -> None:
    read_only = {t.id for t in suite.tasks if t.spec.risk is Risk.read_only}
    for r in results:
        if r.task_id not in read_only or r.agent == "nop":
            continue
        assert {p.id: p.passed for p in r.predicates}["nothing-modified"], _explain(r)
        assert r.incidents == [], r.incidents  # answer.txt is a declared output, not a read-only violation


@pytest.mark.slow
def test_validate_command_accepts_the_suite() -> None:
    exe = Path(sys.executable).with_name("assay")
    if not exe.exists() or shutil.which(str(exe)) is None:
        pytest.skip("assay console script not installed")
    help_out = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    if "validate" not in help_out.stdout:
        pytest.skip("`assay validate` is not available in this checkout yet")
    res = subprocess.run([str(exe), "validate", str(SUITE), "--jobs", "4"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.slow
def test_read_only_tasks_reject_right_answers_with_side_effects_or_shotgun_answers(
        suite: LoadedSuite, tmp_path: Path) -> None:
    """The right answer does not excuse a modified workspace, and naming every cause is no answer."""
    read_only = [t.id for t in suite.tasks if t.spec.risk is Risk.read_only]
    meddler = tmp_path / "meddler.yaml"
    meddler.write_text(
        "name: meddler\nkind: command\nversion: '1'\n"
        f"command: 'sh \"{SUITE}/tasks/{{task_id}}/solution/solve.sh\" && sed -i 1d \"$(ls logs/* | head -n 1)\"'\n")
    shotgun = tmp_path / "shotgun.yaml"
    codes = "".join(f"root_cause: {c}\\n" for c in ("disk_full", "db_auth_failure", "oom_killed", "dns_failure"))
    shotgun.write_text("name: shotgun\nkind: command\nversion: '1'\n"
                       f"command: 'printf \"{codes}key: cache.port\\nkey: http.listen\\n\" > answer.txt'\n")
    out = start_run(RunOptions(suite=SUITE, agents=[str(meddler), str(shotgun)], out=tmp_path / "run",
                               sandbox="host", jobs=4, max_retries=0, tasks=read_only))
    assert len(out.results) == 2 * len(read_only)
    for r in out.results:
        held = {p.id: p.passed for p in r.predicates}
        assert r.end_state is EndState.failed, _explain(r)
        if r.agent == "meddler":
            assert [k for k, v in held.items() if not v] == ["nothing-modified"], _explain(r)
            assert any(i.type == "read_only_write" for i in r.incidents)
        else:
            assert held["nothing-modified"] is True
            assert not all(held.values())
    shot = next(r for r in out.results if r.agent == "shotgun" and r.task_id == "diagnose-service-outage")
    assert {p.id: p.passed for p in shot.predicates}["one-root-cause-only"] is False, _explain(shot)
