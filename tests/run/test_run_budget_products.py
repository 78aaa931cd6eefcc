"""The run budget with real product agents (Pi, Hermes) in bubblewrap, driven by the scripted
model: the gateway refuses the attempt in flight its next model call (HTTP 400
``budget_exceeded``, whatever the agent does with it), the result says ``run_budget``, the trial
never started stays pending; a resume with a higher budget finishes the run and it verifies."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.records.results import EndState
from assay.run import RunOptions, resume_run, start_run
from assay.run_budget.log import read_log
from assay.spec.budget import BudgetName
from assay.spec.run_budget import RunBudget
from assay.store.integrity import verify_run
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.agents.products.test_e2e import _require
from tests.conftest import write_suite, write_task

pytestmark = [pytest.mark.agents, pytest.mark.slow]

SCRIPT = {"turns": [
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo a > a.txt"}}]},
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo b > b.txt"}}]},
    {"text": "Wrote both files."},
]}


@pytest.mark.parametrize("agent", ["pi", "hermes"])
def test_product_agent_is_stopped_by_the_run_budget_and_resumed(tmp_path: Path, agent: str) -> None:
    _require(agent)
    s = write_suite(tmp_path / "suite", categories=[{"id": "code", "weight": 1}])
    write_task(s, "two-files", task={"category": "code", "tools": ["shell"], "model_script": "model.yaml",
                                     "budget": {"wall_time_s": 120},
                                     "predicates": [{"id": "a", "kind": "file_exists", "path": "a.txt"},
                                                    {"id": "b", "kind": "file_exists", "path": "b.txt"}]},
               files={"model.yaml": yaml.safe_dump(SCRIPT)})
    out = start_run(RunOptions(suite=s, agents=[agent], model="scripted", sandbox="bwrap", out=tmp_path / "run",
                               repeat=2, run_budget=RunBudget(max_tokens=1)))
    [cut] = out.results  # the order is shuffled (recorded seed): whichever trial went first is cut
    first = cut.trial_id
    [second] = [t for t in out.manifest.plan.trials if t != first]
    assert (cut.end_state, cut.reason, cut.budget_exceeded) == (EndState.infra_error, "run_budget", BudgetName.run_budget), \
        (cut.reason, cut.errors)
    assert {p.id: p.passed for p in cut.predicates} == {"a": True, "b": False}  # the first turn ran, no more
    assert cut.usage.model_calls == 1
    refused = [e for e in read_events(out.run_dir.trace_path(first)) if e.kind is EventKind.budget_exceeded]
    assert refused and all(e.source is Source.gateway and e.data["budget"] == "run_budget" for e in refused)
    assert out.run_dir.attempts_of(second) == []
    assert out.budget is not None and out.budget.stopped and out.budget.pending == out.manifest.plan.trials

    done = resume_run(out.run_dir.path, run_budget=RunBudget(max_tokens=10_000_000))
    assert done.budget is not None and not done.budget.stopped
    finals = {r.trial_id: r for r in done.results if r.attempt == max(done.run_dir.attempts_of(r.trial_id))}
    assert {t: r.end_state for t, r in finals.items()} == {first: EndState.passed, second: EndState.passed}
    assert [e["event"] for e in read_log(done.run_dir)] == ["stopped", "changed"]
    assert verify_run(done.run_dir.path).ok
