"""Budgets the harness enforces for every agent: real product agents (Pi, Hermes) and the
reference agent, driven by the scripted model inside the bubblewrap sandbox. A task's
``budget.turns`` and ``budget.tool_calls`` are refused by the gateway (model turns, tool calls
the model issues) and by the world (world tool calls over MCP or natively), and the result says
which budget ended the attempt."""

from __future__ import annotations


import pytest
import yaml

from assay.run import RunOptions, start_run
from assay.spec.budget import BudgetName
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.agents.products.test_e2e import _require
from tests.conftest import write_suite, write_task

pytestmark = [pytest.mark.agents, pytest.mark.slow]

AGENTS = ["pi", "hermes", "reference"]
SHELL_SCRIPT = {"turns": [
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo a > a.txt"}}]},
    {"tool_calls": [{"name": "shell", "arguments": {"command": "echo b > b.txt"}}]},
    {"text": "Wrote both files."},
]}
ENTRY = {"date": "2026-03-14", "currency": "CNY", "category": "dining", "merchant": "Harbor Dumpling House"}
WORLD_SCRIPT = {"turns": [
    {"tool_calls": [{"name": "ledger.record_entry", "arguments": {**ENTRY, "amount": 1}}]},
    {"tool_calls": [{"name": "ledger.record_entry", "arguments": {**ENTRY, "amount": 2}}]},
    {"text": "Recorded both."},
]}


def _added(amount: int, required: bool) -> dict:
    return {"id": f"entry-{amount}", "kind": "world_diff", "world": "ledger", "required": required,
            "changes": [{"table": "entries", "op": "added", "match": {**ENTRY, "amount": amount}}]}


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory: pytest.TempPathFactory):
    for a in AGENTS[:2]:
        _require(a)
    tmp = tmp_path_factory.mktemp("budgets")
    s = write_suite(tmp / "suite", categories=[{"id": "code", "weight": 1}])
    files = [{"id": "a", "kind": "file_exists", "path": "a.txt", "required": False},
             {"id": "b", "kind": "file_exists", "path": "b.txt"}]
    for tid, budget in (("tool-calls", {"tool_calls": 1}), ("turns", {"turns": 1})):
        write_task(s, tid, task={"category": "code", "tools": ["shell"], "model_script": "model.yaml",
                                 "budget": {"wall_time_s": 120, **budget}, "predicates": files},
                   files={"model.yaml": yaml.safe_dump(SHELL_SCRIPT)})
    write_task(s, "world-calls", task={
        "category": "code", "tools": ["ledger.*"], "model_script": "model.yaml", "risk": "external_write",
        "budget": {"wall_time_s": 120, "tool_calls": 1},
        "worlds": {"ledger": {"categories": ["dining"], "entries": []}},
        "predicates": [_added(1, False), _added(2, True)]}, files={"model.yaml": yaml.safe_dump(WORLD_SCRIPT)})
    return start_run(RunOptions(suite=s, agents=AGENTS, model="scripted", sandbox="bwrap", out=tmp / "run", jobs=2))


def _result(out, agent: str, task: str):
    [r] = [r for r in out.results if r.agent == agent and r.task_id == task]
    return r, list(read_events(out.run_dir.trace_path(r.trial_id), attempt=r.attempt))


@pytest.mark.parametrize("agent", AGENTS)
def test_tool_call_budget_ends_the_attempt(budget_run, agent: str) -> None:
    r, events = _result(budget_run, agent, "tool-calls")
    held = {p.id: p.passed for p in r.predicates}
    assert held == {"a": True, "b": False}, (r.reason, r.errors)  # the first call ran, the second never did
    assert (r.end_state.value, r.reason) == ("fail", "budget_exceeded")
    assert r.budget_exceeded is BudgetName.tool_calls and "tool_calls" in r.limits_exceeded
    refused = [e.data for e in events if e.kind is EventKind.budget_exceeded]
    if agent == "reference":  # it stops itself at its budget before asking again; the gateway agrees
        assert refused == []
    else:  # the gateway did not deliver the reply that would have been the second tool call; an agent may
        # ask again after a refusal that reached it inside a stream (Hermes retries twice): refused each time
        assert refused and {(e["budget"], e["limit"], e["used"]) for e in refused} == {("tool_calls", 1, 1)}
        assert all(e.source is Source.gateway for e in events if e.kind is EventKind.budget_exceeded)


@pytest.mark.parametrize("agent", AGENTS)
def test_turn_budget_ends_the_attempt(budget_run, agent: str) -> None:
    r, events = _result(budget_run, agent, "turns")
    assert {p.id: p.passed for p in r.predicates} == {"a": True, "b": False}, (r.reason, r.errors)
    assert (r.end_state.value, r.reason) == ("fail", "budget_exceeded")
    assert r.budget_exceeded is BudgetName.turns
    assert r.usage.model_calls == 1  # one model turn answered, no more
    if agent != "reference":
        [e] = [e.data for e in events if e.kind is EventKind.budget_exceeded]
        assert (e["budget"], e["used"], e["call"]) == ("turns", 1, 2)


@pytest.mark.parametrize("agent", AGENTS)
def test_world_calls_count_against_tool_calls_whatever_the_exposure(budget_run, agent: str) -> None:
    r, events = _result(budget_run, agent, "world-calls")
    assert {p.id: p.passed for p in r.predicates} == {"entry-1": True, "entry-2": False}, (r.reason, r.errors)
    assert (r.end_state.value, r.reason, r.budget_exceeded) == ("fail", "budget_exceeded", BudgetName.tool_calls)
    world_calls = [e for e in events if e.source is Source.world and e.kind is EventKind.tool_call]
    executed = [e for e in events if e.source is Source.world and e.kind is EventKind.tool_result and e.data["executed"]]
    assert len(executed) == 1
    assert r.usage.tool_calls == len(world_calls)  # each world call counted once, not again as the agent's copy
    if agent != "reference":  # over MCP the model's call is the world's to count: the world refused the second
        assert {e.data["channel"] for e in world_calls} == {"mcp"}
        [e] = [e for e in events if e.kind is EventKind.budget_exceeded]
        assert e.source is Source.world and (e.data["budget"], e.data["used"], e.data["channel"]) == ("tool_calls", 1, "mcp")
        assert not [e for e in events if e.source is Source.gateway and e.kind is EventKind.budget_exceeded]
