"""Conversation tasks with the real product agents, each through its own session mechanism:
Pi replays the typed history as its own v3 session and continues it with ``--session-id``; DSH
continues the session its first turn made (``--session-id``) and cannot replay a history, so
history tasks are skipped for it, never flattened; Hermes replays the history into its
``state.db`` through its own ``SessionDB`` and continues with ``hermes chat -q … --resume``;
OpenClaw imports the history with its own ``doctor --session-sqlite import`` and continues with
``openclaw agent --local --session-id``. An agent that loses its session between turns is an
``infra_error`` (``session_lost``), never a fresh start. Scripted model backend, real bubblewrap
sandbox."""

from __future__ import annotations

import json
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
from tests.conftest import ROOT, suite_with_wall_time

pytestmark = [pytest.mark.agents, pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "conversations"
NO_HISTORY = {"correction-live", "clarify-then-act", "simulated-user"}


def _examples_run(tmp_path_factory: pytest.TempPathFactory, agents: list[str], tasks: list[str] | None = None,
                  wall_time_s: int | None = None):
    """The example suite for ``agents``; ``wall_time_s``: on a copy whose default wall time is that."""
    why = _missing()
    if why:
        pytest.skip(why)
    missing = [a for a in agents if install.find(a) is None]
    if missing:
        pytest.skip(f"{missing} not installed")
    base = tmp_path_factory.mktemp("conversations")
    suite = EXAMPLE if wall_time_s is None else suite_with_wall_time(EXAMPLE, base / "suite", wall_time_s)
    return start_run(RunOptions(suite=suite, agents=agents, model="scripted", sandbox="bwrap", out=base / "run",
                                jobs=2, tasks=tasks))


@pytest.fixture(scope="module")
def conversations_run(tmp_path_factory: pytest.TempPathFactory):
    """Pi and DSH on every example conversation."""
    return _examples_run(tmp_path_factory, ["pi", "dsh"])


@pytest.fixture(scope="module")
def hermes_run(tmp_path_factory: pytest.TempPathFactory):
    return _examples_run(tmp_path_factory, ["hermes"])


#: OpenClaw takes about 10 s of CPU per turn (its whole run of the nine examples: 4 to 6 min of a
#: 2-core CI machine), so it runs the two that cover its two mechanisms: the longest typed history
#: imported into its store, and a live conversation of four turns with no history at all. Pi and
#: Hermes hold all nine.
OPENCLAW_TASKS = ["long-history", "correction-live"]
#: the example's 120 s hold Pi's and Hermes' turns; OpenClaw's four turns of correction-live ran
#: out of them at turn 3 on a 2-core machine whose other core ran the rest of the suite
OPENCLAW_WALL_S = 600


@pytest.fixture(scope="module")
def openclaw_run(tmp_path_factory: pytest.TempPathFactory):
    return _examples_run(tmp_path_factory, ["openclaw"], OPENCLAW_TASKS, wall_time_s=OPENCLAW_WALL_S)


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


#: how each agent continues its session on turn 2 and later, as its argv shows
CONTINUES = {"hermes": "--resume", "openclaw": "--session-id"}


def test_hermes_holds_every_example_conversation_through_its_own_session(hermes_run) -> None:
    _holds_every_conversation(hermes_run, "hermes")


@pytest.mark.timeout(900)
def test_openclaw_holds_an_imported_history_and_a_live_conversation_through_its_own_session(openclaw_run) -> None:
    _holds_every_conversation(openclaw_run, "openclaw", OPENCLAW_TASKS)


def _holds_every_conversation(run, agent: str, only: list[str] | None = None) -> None:
    tasks = {t.id: t for t in load_suite(EXAMPLE).tasks if only is None or t.id in only}
    mine = _mine(run, agent)
    assert set(mine) == set(tasks)
    for task_id, r in mine.items():
        assert r.end_state.value == "pass", (agent, task_id, r.reason, r.errors,
                                             [(p.id, p.evidence) for p in r.predicates if not p.passed])
        events = list(read_events(run.run_dir.trace_path(r.trial_id), attempt=1))
        history = tasks[task_id].spec.conversation.history
        first = next(e.data for e in events if e.kind == EventKind.model_request)
        spoken = sum(1 for h in history if h.type in ("agent", "clarification", "tool", "tool_failed", "claim"))
        assert first["assistant_turns"] == spoken, (agent, task_id)  # the history reached the model as messages
        argvs = [e.data["config"]["argv"] for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
        assert len(argvs) == sum(1 for e in events if e.data.get("event") == "turn_ended") >= 1
        flag = CONTINUES[agent]
        # turn 1 continues the replayed history (Hermes) or names the session (OpenClaw); later turns continue it
        assert all(flag in a for a in argvs[1:]), argvs
        assert (flag in argvs[0]) == bool(history or agent == "openclaw"), argvs[0]
        # each turn's agent events are that turn's only: the history is never re-read as the agent's own calls
        turn_calls = [e for e in events if e.source.value == "agent" and e.kind == EventKind.tool_call]
        assert not [e for e in turn_calls if str(e.data.get("id", "")).startswith("hist_")], (agent, task_id)


def _lost_run(tmp_path: Path, agent: str, command: str):
    """correction-live for ``agent`` with a shell, whose turn 1 runs ``command`` in the agent's shell."""
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
        {"tool_calls": [{"name": "shell", "arguments": {"command": command}}]}, {"text": "Done."}]}))
    out = start_run(RunOptions(suite=s, agents=[agent], model="scripted", sandbox="bwrap", out=tmp_path / "run"))
    [r] = out.results
    assert r.end_state.value == "infra_error" and r.reason == "session_lost", (r.reason, r.errors)
    events = list(read_events(out.run_dir.trace_path(r.trial_id), attempt=1))
    assert [e.data["turn"] for e in events if e.data.get("event") == "turn_ended"] in ([], [1])
    runs = [e for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
    assert len(runs) <= 1  # turn 2 never ran on a fresh session
    # what the shell printed reached the model (the gateway's record): the command really ran
    seen = " ".join(json.dumps(e.data) for e in events if e.source.value == "gateway")
    [err] = [e.data for e in events if e.kind == EventKind.error and e.data.get("reason") == "session_lost"
             and "turn" in e.data]
    return err, seen


def test_hermes_whose_store_is_replaced_by_a_link_to_a_valid_store_loses_its_session(tmp_path: Path) -> None:
    """Turn 1's shell swaps state.db for a link to a host file that is a valid Hermes store with
    one session (which would pass the check if it were read): the link is not followed."""
    from tests.agents.products.test_conversation_stores import hermes_seed

    why = _missing()
    inst = install.find("hermes")
    if why or inst is None:
        pytest.skip(why or "hermes is not installed")
    bait = tmp_path / "bait"
    hermes_seed(inst, bait, "20260101_000000_bait00", [{"role": "user", "content": "a"},
                                                       {"role": "assistant", "content": "b"}])
    target = bait / "hermes" / "state.db"
    before = target.read_bytes()
    # (Hermes' own blocklist refuses an `rm` naming $HOME: the store is moved aside instead)
    err, seen = _lost_run(tmp_path, "hermes", f'cd "$HOME"/hermes && mv state.db old.db && ln -s {target} state.db '
                                              f'&& echo planted')
    assert "planted" in seen  # the agent's shell really did it
    assert "cannot be read safely" in err["message"] and "link" in err["message"], err
    assert target.read_bytes() == before


@pytest.mark.parametrize("agent, command, says", [
    ("pi", 'rm -rf "$HOME"/sessions/* && echo gone', "is not the one session"),
    ("openclaw", 'rm -rf "$HOME"/state/agents && echo gone', "OpenClaw's session store"),
])
def test_an_agent_whose_session_store_is_removed_loses_its_session(agent: str, command: str, says: str,
                                                                    tmp_path: Path) -> None:
    """Turn 1's own shell removes the session store: turn 2 must not silently start afresh."""
    why = _missing()
    if why or install.find(agent) is None:
        pytest.skip(why or f"{agent} is not installed")
    err, seen = _lost_run(tmp_path, agent, command)
    assert "gone" in seen  # the agent's shell really did it
    assert says in err["message"], err
