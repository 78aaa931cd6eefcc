"""Conversation tasks end to end with the reference agent: real bubblewrap sandbox, real world
services, the gateway's scripted backend. The happy path over examples/conversations, then what
must fail: a wrong turn whose final state is right, an agent that leaves the script, a repeated
false claim, a lost session, a planted link, and an agent that cannot hold a conversation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.records.results import AttemptResult
from assay.run import RunOptions, start_run
from assay.score.engine import score_run
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.writer import read_events
from tests.conftest import ROOT

pytestmark = pytest.mark.slow

EXAMPLE = ROOT / "examples" / "conversations"


def _suite(tmp: Path, task: str, model: dict | None = None, edit=None) -> Path:
    """One example task in a suite of its own, with its model script (and task.yaml) changed."""
    s = tmp / "suite"
    (s / "tasks").mkdir(parents=True)
    data = yaml.safe_load((EXAMPLE / "suite.yaml").read_text())
    spec = yaml.safe_load((EXAMPLE / "tasks" / task / "task.yaml").read_text())
    data["categories"] = [c for c in data["categories"] if c["id"] == spec["category"]]
    (s / "suite.yaml").write_text(yaml.safe_dump(data))
    shutil.copytree(EXAMPLE / "tasks" / task, s / "tasks" / task)
    if model is not None:
        (s / "tasks" / task / "model.yaml").write_text(yaml.safe_dump(model))
    if edit is not None:
        edit(spec)
        (s / "tasks" / task / "task.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return s


def _one(tmp: Path, suite: Path, agent: str = "reference") -> tuple[AttemptResult, list]:
    out = start_run(RunOptions(suite=suite, agents=[agent], model="scripted", out=tmp / "run"))
    [r] = out.results
    return r, list(read_events(out.run_dir.trace_path(r.trial_id), attempt=r.attempt))


def _preds(r: AttemptResult) -> dict[str, tuple[bool, int | None]]:
    return {p.id: (p.passed, p.turn) for p in r.predicates}


def test_reference_agent_passes_every_example_conversation_with_per_turn_scores(tmp_path: Path) -> None:
    out = start_run(RunOptions(suite=EXAMPLE, agents=["reference"], model="scripted", out=tmp_path / "run", jobs=2))
    assert len(out.results) >= 6
    for r in out.results:
        assert r.end_state.value == "pass", (r.task_id, r.reason, r.errors, _preds(r))
        turns = {p.turn for p in r.predicates if p.turn is not None}
        assert turns, r.task_id  # every example checks the state after at least one turn
        [conv] = [p for p in r.predicates if p.kind == "conversation"]
        assert conv.passed and conv.evidence["turns_run"] >= max(turns)
    doc = score_run(out.run_dir.path)
    by_task = {t.task: t for t in doc.tasks}
    live = by_task["correction-live"].turns
    assert sorted(live) == ["1", "2", "3"] and all(t.passes == 1 and t.pass_hat_k["1"] == 1.0 for t in live.values())
    rows = {t.trial_id: t for t in doc.trials}
    assert all(rows[r.trial_id].turns and all(rows[r.trial_id].turns.values()) for r in out.results)
    from assay.report import build_report

    html = build_report(out.run_dir.path, "html")  # the report shows the same per-turn figures
    assert "<th>per turn</th>" in html and "t1 1/1 pass^1 1.00 · t2 1/1 pass^1 1.00 · t3 1/1 pass^1 1.00" in html


def test_history_reaches_the_model_as_messages_and_the_trace_is_in_turn_order(tmp_path: Path) -> None:
    r, events = _one(tmp_path, _suite(tmp_path, "correction-carried"))
    assert r.end_state.value == "pass"
    requests = [e.data for e in events if e.kind == EventKind.model_request]
    assert requests[0]["assistant_turns"] == 3  # the history's three agent messages came as messages
    fed = json.loads(RunDir(tmp_path / "run").read_artifact(r.artifacts["native.reference-history"]))
    assert [m["role"] for m in fed] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    order = [(e.kind, e.data.get("turn"), e.data.get("event")) for e in events if e.source == Source.harness
             and e.kind in (EventKind.user_message, EventKind.log) and ("turn" in e.data or e.data.get("event"))]
    users = [t for k, t, _ in order if k == EventKind.user_message]
    ends = [t for k, t, ev in order if ev == "turn_ended"]
    assert users == ends == [1, 2]
    assert [ev for _, _, ev in order].count("history") == 5


#: correction-live answered so: turn 2 only says it fixed the entry; turn 3 fixes it and books the next one
WRONG_TURN_2 = {"turns": [
    {"tool_calls": [{"name": "ledger.record_entry", "arguments": {"date": "2026-03-20", "amount": 86, "currency": "CNY",
                                                                  "category": "groceries", "merchant": "Lumen Kitchen"}}]},
    {"text": "Booked."},
    {"text": "Fixed, it is dining now."},  # the claim, no call
    {"tool_calls": [{"name": "ledger.amend_entry", "arguments": {"id": "e3", "category": "dining"}},
                    {"name": "ledger.record_entry", "arguments": {"date": "2026-03-21", "amount": 40, "currency": "CNY",
                                                                  "category": "dining", "merchant": "Lumen Kitchen"}}]},
    {"text": "Booked."}]}


def test_a_wrong_turn_fails_the_attempt_even_when_the_final_state_is_right(tmp_path: Path) -> None:
    """Turn 2 only says it fixed the entry; turn 3 fixes it and books the next one: the end state
    is right, turn 2 was not."""
    r, _ = _one(tmp_path, _suite(tmp_path, "correction-live", WRONG_TURN_2))
    preds = _preds(r)
    assert preds["two-dining"] == (True, None)  # the final state holds
    assert preds["t1-booked"] == (True, 1) and preds["t3-carried-forward"] == (True, 3)
    assert preds["t2-fixed"] == (False, 2)
    assert r.end_state.value == "fail"
    doc = score_run(tmp_path / "run")
    assert [t.turns for t in doc.trials] == [{"1": True, "2": False, "3": True}]
    [unit] = doc.tasks
    assert unit.turns["2"].passes == 0 and unit.turns["2"].pass_hat_k["1"] == 0.0 and unit.turns["3"].passes == 1


def test_html_markdown_and_json_show_the_same_per_turn_figures(tmp_path: Path) -> None:
    """Two repetitions of a conversation whose turn 2 is wrong: each report format shows the
    figures the scorer computed, through the one formatting function, and they agree with the
    verdicts the attempts recorded."""
    from assay.records.scores import TaskScore
    from assay.report import build_report
    from assay.report.fmt import turn_summary

    out = start_run(RunOptions(suite=_suite(tmp_path, "correction-live", WRONG_TURN_2), agents=["reference"],
                               model="scripted", out=tmp_path / "run", repeat=2))
    assert len(out.results) == 2
    # the figures from the attempts themselves: a turn passes when its required predicates held
    by_turn: dict[str, int] = {}
    for r in out.results:
        for n in {p.turn for p in r.predicates if p.turn is not None}:
            by_turn[str(n)] = by_turn.get(str(n), 0) + all(p.passed for p in r.predicates if p.turn == n and p.required)
    assert by_turn == {"1": 2, "2": 0, "3": 2}
    report = json.loads(build_report(out.run_dir.path, "json"))
    [task] = [TaskScore.model_validate(t) for t in report["score"]["tasks"]]
    assert {n: (t.n, t.passes) for n, t in task.turns.items()} == {n: (2, p) for n, p in by_turn.items()}
    line = turn_summary(task)
    assert line == "t1 2/2 pass^2 1.00 · t2 0/2 pass^2 0.00 · t3 2/2 pass^2 1.00"
    md = build_report(out.run_dir.path, "md")
    assert f"| correction-live | base | 0/2 | {line} |" in md and "| conversation task |" in md
    assert f"<td>{line}</td>" in build_report(out.run_dir.path, "html")


def test_an_agent_that_leaves_the_script_ends_the_conversation_off_script(tmp_path: Path) -> None:
    """It guesses a category instead of asking: the scripted user has no reply for that."""
    model = {"turns": [
        {"tool_calls": [{"name": "ledger.record_entry", "arguments": {"date": "2026-03-15", "amount": 350, "currency": "CNY",
                                                                      "category": "shopping", "merchant": "Xinghe Trading"}}]},
        {"text": "Booked as shopping."}]}
    r, events = _one(tmp_path, _suite(tmp_path, "clarify-then-act", model))
    assert r.end_state.value == "fail"
    [conv] = [p for p in r.predicates if p.kind == "conversation"]
    assert not conv.passed and conv.evidence["ended_by"] == "off_script" and conv.evidence["turns_run"] == 1
    [t2] = [p for p in r.predicates if p.id == "t2-booked"]
    assert not t2.passed and t2.evidence["turn_not_reached"] == 2
    assert _preds(r)["t1-asked"] == (False, 1)
    assert len([e for e in events if e.kind == EventKind.user_message]) == 1  # no second user turn was sent


def test_repeating_a_false_claim_fails_the_self_contamination_trap(tmp_path: Path) -> None:
    model = {"turns": [{"text": "Already recorded."}, {"text": "Yes, it was already recorded earlier."}]}
    r, events = _one(tmp_path, _suite(tmp_path, "contamination-trap", model))
    assert r.end_state.value == "fail"
    preds = _preds(r)
    assert preds["t1-acted"] == (False, 1) and preds["t1-world-changed"] == (False, 1)
    assert not [e for e in events if e.source == Source.world and e.kind == EventKind.tool_call]
    fed = json.loads(RunDir(tmp_path / "run").read_artifact(r.artifacts["native.reference-history"]))
    assert fed[-1]["role"] == "tool" and fed[-1]["content"].startswith("ERROR: not executed")


def test_a_lost_session_is_an_infrastructure_error_never_a_fresh_start(tmp_path: Path) -> None:
    """Turn 1's shell plants a link where the loop saves the conversation: turn 2 has nothing of
    its own to continue, and the harness does not start it afresh."""
    def edit(spec: dict) -> None:
        spec["tools"] = ["shell", "ledger.*"]
    model = {"turns": [
        {"text": "(h)"}, {"text": "(h)"}, {"text": "(h)"},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ln -s /dev/null \"$HOME/conv/t1/messages.json\""}},
                        {"name": "ledger.amend_entry", "arguments": {"id": "e3", "category": "dining"}}]},
        {"text": "Fixed."}]}
    r, events = _one(tmp_path, _suite(tmp_path, "correction-carried", model, edit))
    assert r.end_state.value == "infra_error" and r.reason == "session_lost", (r.reason, r.errors)
    assert not r.predicates
    assert [e.data["turn"] for e in events if e.data.get("event") == "turn_ended"] == [1]  # turn 2 never ran
    requests = [e for e in events if e.kind == EventKind.model_request]
    assert len(requests) == 2  # both of turn 1: no model call from a turn 2 started afresh
    [err] = [e.data for e in events if e.kind == EventKind.error and e.data.get("turn") == 2]
    assert "messages.json" in err["message"]


def test_a_link_planted_where_the_next_turn_writes_is_never_followed(tmp_path: Path) -> None:
    target = tmp_path / "outside"
    target.mkdir()
    def edit(spec: dict) -> None:
        spec["tools"] = ["shell", "ledger.*"]
    model = {"turns": [
        {"text": "(h)"}, {"text": "(h)"}, {"text": "(h)"},
        {"tool_calls": [{"name": "shell", "arguments": {"command": f"ln -s {target} \"$HOME/conv/t2\""}}]},
        {"text": "Done."}]}
    r, _ = _one(tmp_path, _suite(tmp_path, "correction-carried", model, edit))
    assert r.end_state.value == "infra_error" and r.reason == "session_lost"
    assert "link or not a directory" in " ".join(r.errors)
    assert list(target.iterdir()) == []  # nothing of turn 2 was written through the link


def test_an_agent_without_a_session_mechanism_is_skipped_never_flattened(tmp_path: Path) -> None:
    agent = tmp_path / "echo.yaml"
    agent.write_text(yaml.safe_dump({"name": "echo", "kind": "command", "command": ["/bin/true"]}))
    suite = _suite(tmp_path, "clarify-then-act")
    out = start_run(RunOptions(suite=suite, agents=[str(agent)], model="scripted", out=tmp_path / "run"))
    [r] = out.results
    assert r.end_state.value == "skipped"
    assert r.reason == "unsupported: echo has no session it can continue between turns"


def test_the_simulated_user_speaks_through_its_own_gateway_recorded_apart(tmp_path: Path) -> None:
    r, events = _one(tmp_path, _suite(tmp_path, "simulated-user"))
    assert r.end_state.value == "pass", (r.reason, r.errors, _preds(r))
    sim = r.extra["simulator"]
    assert sim["model_calls"] == 2 and sim["lines"] == 2 and sim["budget_exceeded"] == []
    assert r.usage.model_calls == 3  # the agent's three calls only: the simulator's are not the agent's
    agent_requests = [e for e in events if e.kind == EventKind.model_request]
    assert len(agent_requests) == 3
    users = [(e.data["turn"], e.data["by"]) for e in events if e.kind == EventKind.user_message]
    assert users == [(1, "script"), (2, "simulator")]
    [ended] = [e.data for e in events if e.data.get("event") == "conversation_ended"]
    assert ended["ended_by"] == "goal"
    rec = RunDir(tmp_path / "run").read_artifact(r.artifacts["simulator.gateway.session"]).decode()
    assert "45 CNY, Blue Cab" in rec and "[DONE]" in rec
    key_material = [e for e in events if "sk-assay-" in json.dumps(e.data)]
    assert not key_material  # neither key reaches the trace


def test_a_simulated_user_out_of_calls_ends_the_conversation_on_its_budget(tmp_path: Path) -> None:
    def edit(spec: dict) -> None:
        spec["conversation"]["simulator"]["max_calls"] = 1
    r, _ = _one(tmp_path, _suite(tmp_path, "simulated-user", edit=edit))
    [conv] = [p for p in r.predicates if p.kind == "conversation"]
    assert conv.evidence["ended_by"] == "budget" and not conv.passed
    assert r.end_state.value == "fail"
    assert r.extra["simulator"]["budget_exceeded"] == ["model_calls"]
    assert r.extra["simulator"]["lines"] == 1
