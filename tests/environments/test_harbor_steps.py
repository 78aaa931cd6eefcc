"""Harbor's multi-step tasks (``[[steps]]``, ``steps/NAME/{instruction.md,tests,solution}``): the
agent runs each step afresh (a new session, only that step's instruction) in one shared
environment, and each step is verified after it ran. Two of 19 fetched single-task repositories
are shaped so; they were refused ("no assay equivalent yet"). They import as a conversation whose
turns are the steps, each starting the agent afresh (``fresh_sessions``), each with its own
reward script over the state kept after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from assay.cli.main import main
from assay.environments.store import ImageStore
from assay.importers import import_suite

CHECK = """#!/bin/bash
# shared helper (task-level tests/), uploaded before each step's own tests
want() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
"""
STEP_TEST = """#!/bin/bash
source /tests/check.sh
mkdir -p /logs/verifier
if {cond}; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def steps_task(root: Path, *, strategy: str | None = None, extra_toml: str = "") -> Path:
    """Two steps over one /app: the second needs what the first left (state persists)."""
    t = root / "two-steps"
    (t / "environment").mkdir(parents=True)
    (t / "environment/Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (t / "tests").mkdir()
    (t / "tests/check.sh").write_text(CHECK)
    head = f'multi_step_reward_strategy = "{strategy}"\n' if strategy else ""
    (t / "task.toml").write_text(
        f'schema_version = "1.1"\n{head}\n[agent]\ntimeout_sec = 60.0\n\n[verifier]\ntimeout_sec = 30.0\n\n'
        '[environment]\nbuild_timeout_sec = 600.0\nworkdir = "/app"\n\n'
        '[[steps]]\nname = "scaffold"\n\n[steps.agent]\ntimeout_sec = 40.0\n\n'
        '[[steps]]\nname = "finish"\n\n[steps.verifier]\ntimeout_sec = 20.0\n' + extra_toml)
    for name, text, cond, solve in (
            ("scaffold", "Write 'one' into /app/a.txt.", "want /app/a.txt one", "echo one > /app/a.txt"),
            ("finish", "Write 'two' into /app/b.txt; keep /app/a.txt.",
             "want /app/a.txt one && want /app/b.txt two", 'echo two > "$(pwd)/b.txt"')):
        s = t / "steps" / name
        (s / "tests").mkdir(parents=True)
        (s / "solution").mkdir()
        (s / "instruction.md").write_text(text + "\n")
        (s / "tests/test.sh").write_text(STEP_TEST.format(cond=cond))
        (s / "solution/solve.sh").write_text(f"#!/bin/bash\nset -e\n{solve}\n")
    return t


def _task(suite: Path) -> dict:
    return yaml.safe_load((suite / "tasks/two-steps/task.yaml").read_text())


def _report(suite: Path, tid: str = "two-steps") -> dict:
    return {t["id"]: t for t in json.loads((suite / "import-report.json").read_text())["tasks"]}[tid]


def test_steps_import_as_fresh_turns_and_the_oracle_passes_each(tmp_path: Path, image_store: ImageStore) -> None:
    steps_task(tmp_path / "src")
    suite = tmp_path / "suite"
    import_suite("harbor", tmp_path / "src", suite)
    task = _task(suite)
    conv = task["conversation"]
    assert conv["fresh_sessions"] is True and len(conv["turns"]) == 2
    assert "user" not in conv["turns"][0]  # turn 1 is the prompt: the first step's instruction
    assert (suite / "tasks/two-steps/prompt.md").read_text().startswith("Write 'one'")
    assert conv["turns"][1]["user"].startswith("Write 'two'")
    [p1] = conv["turns"][0]["predicates"]
    assert "predicates" not in conv["turns"][1]  # the state after the last step is the final state:
    [p2] = task["predicates"]  # the last step's reward is the task's final check
    assert p1["tests"] == "steps/scaffold/tests" and p2["tests"] == "steps/finish/tests" and p2["timeout_s"] == 20.0
    assert task["budget"]["wall_time_s"] == 100.0  # 40 + the task-level 60 for the step that sets none
    # the shared helper first, the step's own files over it
    assert (suite / "tasks/two-steps/hidden/steps/finish/tests/check.sh").is_file()
    out = tmp_path / "run"
    assert main(["run", str(suite), "-a", "oracle,nop", "-q", "-o", str(out)]) == 0
    rows = {json.loads(p.read_text())["agent"]: json.loads(p.read_text())
            for p in out.glob("trials/*/attempts/*/result.json")}
    assert rows["oracle"]["end_state"] == "pass", rows["oracle"]["predicates"]
    assert rows["nop"]["end_state"] == "fail"
    turns = {(p["id"], p.get("turn")): p["passed"] for p in rows["oracle"]["predicates"]}
    assert turns[("reward-scaffold", 1)] and turns[("reward-finish", None)], turns
    assert main(["verify", str(out)]) == 0


def test_the_final_strategy_decides_on_the_last_step_alone(tmp_path: Path) -> None:
    steps_task(tmp_path / "src", strategy="final")
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    task = _task(tmp_path / "suite")
    assert task["conversation"]["turns"][0]["predicates"][0]["required"] is False
    assert task["predicates"][0].get("required", True) is True


def test_a_step_that_does_not_count_towards_the_mean_is_not_required(tmp_path: Path) -> None:
    src = steps_task(tmp_path / "src")
    toml = (src / "task.toml").read_text().replace('name = "scaffold"\n', 'name = "scaffold"\ncontributes_to_mean = false\n')
    (src / "task.toml").write_text(toml)
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    conv = _task(tmp_path / "suite")["conversation"]
    assert conv["turns"][0]["predicates"][0]["required"] is False


@pytest.mark.parametrize(("damage", "why"), [
    (lambda t: (t / "steps/finish/instruction.md").unlink(), "steps/finish/instruction.md"),
    (lambda t: (t / "steps/finish/environment").mkdir(), "steps/finish/environment"),
    (lambda t: (t / "task.toml").write_text('multi_step_reward_strategy = "max"\n' + (t / "task.toml").read_text()),
     "multi_step_reward_strategy"),
])
def test_a_step_assay_cannot_run_as_harbor_does_is_refused_naming_it(tmp_path: Path, damage, why: str) -> None:
    t = steps_task(tmp_path / "src")
    damage(t)
    steps_task(tmp_path / "spare").rename(tmp_path / "src/fine")  # the import goes on without the refused one
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    rep = _report(tmp_path / "suite")
    assert not rep["imported"] and why in " ".join(rep["refused"]), rep


def test_who_may_run_steps_afresh(tmp_path: Path) -> None:
    """An agent that keeps nothing between runs starts afresh each step, and so does each product
    adapter (a new session per step, each checked end to end in
    tests/agents/products/test_fresh_steps_e2e.py); ``reference`` keeps its message list in its home
    and is skipped as unsupported rather than run with a context Harbor would not give it."""
    from assay.agents.builtin import NopAgent, OracleAgent
    from assay.agents.products.dsh.adapter import DshAgent
    from assay.agents.products.hermes.adapter import HermesAgent
    from assay.agents.products.openclaw.adapter import OpenClawAgent
    from assay.agents.products.pi.adapter import PiAgent
    from assay.agents.reference.adapter import ReferenceAgent
    from assay.spec.load import load_suite

    steps_task(tmp_path / "src")
    import_suite("harbor", tmp_path / "src", tmp_path / "suite")
    [task] = load_suite(tmp_path / "suite").tasks
    for agent in (NopAgent(), OracleAgent(), PiAgent(), DshAgent(), HermesAgent(), OpenClawAgent()):
        assert agent.conversation_unsupported(task) is None, agent.name
    why = ReferenceAgent().conversation_unsupported(task)
    assert why is not None and why.startswith("unsupported:") and "step" in why
