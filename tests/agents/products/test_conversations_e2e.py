"""Conversation tasks with the real product agents, each through its own session mechanism:
Pi replays the typed history as its own v3 session and continues it with ``--session-id``; DSH
continues the session its first turn made (``--session-id``) and cannot replay a history, so
history tasks are skipped for it, never flattened; Hermes and OpenClaw have no adapter for
continuing a session yet and are skipped. Scripted model backend, real bubblewrap sandbox."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.agents.products import install
from assay.run import RunOptions, start_run
from assay.spec.load import load_suite
from assay.trace.events import EventKind
from assay.trace.writer import read_events
from tests.agents.products.test_e2e import _missing
from tests.conftest import ROOT

pytestmark = [pytest.mark.agents, pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "conversations"
NO_HISTORY = {"correction-live", "clarify-then-act", "simulated-user"}


@pytest.fixture(scope="module")
def conversations_run(tmp_path_factory: pytest.TempPathFactory):
    why = _missing()
    if why:
        pytest.skip(why)
    agents = [a for a in ("pi", "dsh", "hermes", "openclaw") if install.find(a) is not None]
    if not {"pi", "dsh"} <= set(agents):
        pytest.skip(f"pi and dsh must be installed (found {agents})")
    out = tmp_path_factory.mktemp("conversations") / "run"
    return start_run(RunOptions(suite=EXAMPLE, agents=agents, model="scripted", sandbox="bwrap", out=out, jobs=2))


def _mine(run, agent: str) -> dict:
    return {r.task_id: r for r in run.results if r.agent == agent and r.attempt == 1}


def test_pi_holds_every_example_conversation_through_its_own_session(conversations_run) -> None:
    tasks = {t.id: t for t in load_suite(EXAMPLE).tasks}
    mine = _mine(conversations_run, "pi")
    assert set(mine) == set(tasks)
    for task_id, r in mine.items():
        assert r.end_state.value == "pass", (task_id, r.reason, r.errors,
                                             [(p.id, p.evidence) for p in r.predicates if not p.passed])
        events = list(read_events(conversations_run.run_dir.trace_path(r.trial_id), attempt=1))
        history = tasks[task_id].spec.conversation.history
        first = next(e.data for e in events if e.kind == EventKind.model_request)
        spoken = sum(1 for h in history if h.type in ("agent", "clarification", "tool", "tool_failed", "claim"))
        assert first["assistant_turns"] == spoken, task_id  # the history reached the model as messages
        if history:  # Pi's seeded session file is kept: the history as Pi's own entries
            assert any(name.startswith("native.pi.2026-01-01") for name in r.artifacts), r.artifacts
        runs = [e.data for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
        assert all("--session-id" in run["config"]["argv"] for run in runs)


def test_dsh_continues_its_session_and_is_skipped_where_it_cannot_replay_a_history(conversations_run) -> None:
    mine = _mine(conversations_run, "dsh")
    for task_id, r in mine.items():
        if task_id in NO_HISTORY:
            assert r.end_state.value == "pass", (task_id, r.reason, r.errors,
                                                 [(p.id, p.evidence) for p in r.predicates if not p.passed])
            events = list(read_events(conversations_run.run_dir.trace_path(r.trial_id), attempt=1))
            argvs = [e.data["config"]["argv"] for e in events
                     if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
            assert "--session-id" not in argvs[0] and all("--session-id" in a for a in argvs[1:]), argvs
        else:
            assert r.end_state.value == "skipped" and "cannot replay a typed history" in r.reason


@pytest.mark.parametrize("agent", ["hermes", "openclaw"])
def test_agents_without_a_session_adapter_are_skipped(agent: str, conversations_run) -> None:
    mine = _mine(conversations_run, agent)
    if not mine:
        pytest.skip(f"{agent} is not installed")
    assert {r.end_state.value for r in mine.values()} == {"skipped"}
    assert all(r.reason == f"unsupported: {agent} has no session it can continue between turns" for r in mine.values())


def test_pi_that_loses_its_session_is_an_infra_error_not_a_fresh_start(tmp_path: Path) -> None:
    """Turn 1's own shell removes the session file: turn 2 must not silently start afresh."""
    why = _missing()
    if why or install.find("pi") is None:
        pytest.skip(why or "pi is not installed")
    s = tmp_path / "suite"
    (s / "tasks").mkdir(parents=True)
    data = yaml.safe_load((EXAMPLE / "suite.yaml").read_text())
    data["categories"] = [c for c in data["categories"] if c["id"] == "memory"]
    (s / "suite.yaml").write_text(yaml.safe_dump(data))
    shutil.copytree(EXAMPLE / "tasks" / "correction-live", s / "tasks" / "correction-live")
    spec = yaml.safe_load((s / "tasks/correction-live/task.yaml").read_text())
    spec["tools"] = ["shell", "ledger.*"]
    (s / "tasks/correction-live/task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (s / "tasks/correction-live/model.yaml").write_text(yaml.safe_dump({"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf \"$HOME\"/sessions/* && echo gone"}}]},
        {"text": "Done."}]}))
    out = start_run(RunOptions(suite=s, agents=["pi"], model="scripted", sandbox="bwrap", out=tmp_path / "run"))
    [r] = out.results
    assert r.end_state.value == "infra_error" and r.reason == "session_lost", (r.reason, r.errors)
    events = list(read_events(out.run_dir.trace_path(r.trial_id), attempt=1))
    assert not [e for e in events if e.data.get("event") == "turn_ended" and e.data.get("turn") == 2]
    [err] = [e.data for e in events if e.kind == EventKind.error and e.data.get("reason") == "session_lost"
             and "turn" in e.data]
    assert "is not the one session" in err["message"]
