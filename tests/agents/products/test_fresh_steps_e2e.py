"""A multi-step task (``conversation.fresh_sessions``, Harbor's ``[[steps]]``) with a real product
agent: each step starts the agent afresh, a session of its own and only that step's message, in
the one workspace the step before left. Pi names its session on the command line
(``--session-id``), so a fresh step is a fresh session id; the model's first request of step 2
holds no assistant turn of step 1 (the gateway's record, which no agent writes). Scripted model,
real bubblewrap sandbox."""

from __future__ import annotations

import pytest

from assay.agents.products import install
from assay.run import RunOptions, start_run
from assay.trace.events import EventKind
from assay.trace.writer import read_events
from tests.agents.products.test_e2e import _missing
from tests.conftest import write_suite, write_task

pytestmark = [pytest.mark.agents, pytest.mark.slow]

STEPS_TASK = {
    "category": "code", "tools": ["shell"], "model_script": "model.yaml",
    "budget": {"wall_time_s": 300},
    "conversation": {"fresh_sessions": True, "turns": [
        {"predicates": [{"id": "step1", "kind": "file_contains", "path": "a.txt", "text": "one"}]},
        {"user": "Now write two into b.txt, and keep a.txt.",
         "predicates": [{"id": "step2", "kind": "file_contains", "path": "b.txt", "text": "two"}]}]},
    "predicates": [{"id": "kept", "kind": "file_contains", "path": "a.txt", "text": "one"}],
}
#: one list of turns per step, each answered from its own start (a fresh session starts over)
MODEL = """steps:
  - - tool_calls:
        - {name: shell, arguments: {command: "echo one > a.txt"}}
    - text: "Step one done."
  - - tool_calls:
        - {name: shell, arguments: {command: "echo two > b.txt"}}
    - text: "Step two done."
"""


@pytest.mark.timeout(900)
@pytest.mark.parametrize("agent", ["pi", "dsh", "hermes", "openclaw"])
def test_a_product_runs_each_step_afresh_in_the_workspace_the_step_before_left(tmp_path, agent: str) -> None:
    why = _missing() or (None if install.find(agent) else f"{agent} is not installed")
    if why:
        pytest.skip(why)
    suite = write_suite(tmp_path / "suite")
    write_task(suite, "two-steps", task=STEPS_TASK, prompt="Write one into a.txt.", files={"model.yaml": MODEL})
    out = start_run(RunOptions(suite=suite, agents=[agent], model="scripted", sandbox="bwrap", out=tmp_path / "run"))
    [r] = out.results
    assert r.end_state.value == "pass", (r.reason, r.errors, [(p.id, p.evidence) for p in r.predicates if not p.passed])
    assert {(p.id, p.turn) for p in r.predicates if p.passed} >= {("step1", 1), ("step2", 2), ("kept", None)}
    events = list(read_events(out.run_dir.trace_path(r.trial_id), attempt=1))
    argvs = [e.data["config"]["argv"] for e in events if e.kind == EventKind.log and e.data.get("phase") == "agent_run"]
    assert len(argvs) == 2, argvs
    named = [a[a.index("--session-id") + 1] for a in argvs if "--session-id" in a]
    assert len(set(named)) == len(named), argvs  # where a step names its session, a session of its own
    assert not any("--resume" in a for a in argvs), argvs  # and none continues another
    # the model's first request of each step: step 2's carries no assistant turn of step 1
    firsts, seen_turns = [], set()
    for e in events:
        if e.kind == EventKind.user_message:
            seen_turns.add(e.data["turn"])
        if e.kind == EventKind.model_request and len(firsts) < len(seen_turns):
            firsts.append(e.data)
    assert [f["assistant_turns"] for f in firsts] == [0, 0], firsts
    # each step's own session was read into the trace: the agent's two shell calls, one per step
    turn, calls = 0, []
    for e in events:
        if e.kind == EventKind.user_message:
            turn = e.data["turn"]
        if e.source.value == "agent" and e.kind == EventKind.tool_call:
            calls.append((turn, e.data["arguments"].get("command")))
    assert calls == [(1, "echo one > a.txt"), (2, "echo two > b.txt")], calls


@pytest.mark.timeout(900)
@pytest.mark.parametrize("target", ["old.db", "/etc/hostname"])
def test_a_hermes_store_swapped_for_a_link_between_steps_is_tampering_never_an_infra_error(tmp_path,
                                                                                        target: str) -> None:
    """Step 1's shell moves Hermes' state.db aside and puts a link in its place. The store is never
    read through the link (to a reader that follows none, there is no store: the step's trace is
    empty), step 2 still runs and is verified, and the planted link is an ``agent_home_trap``
    incident, which decides first: the attempt fails, reason ``tampering``, never an infra error a
    denominator would treat as the harness's."""
    why = _missing() or (None if install.find("hermes") else "hermes is not installed")
    if why:
        pytest.skip(why)
    swap = f"echo one > a.txt && cd $HOME/hermes && mv state.db old.db && ln -s {target} state.db"
    suite = write_suite(tmp_path / "suite")
    write_task(suite, "two-steps", task=STEPS_TASK, prompt="Write one into a.txt.",
               files={"model.yaml": MODEL.replace("echo one > a.txt", swap)})
    out = start_run(RunOptions(suite=suite, agents=["hermes"], model="scripted", sandbox="bwrap",
                               out=tmp_path / "run"))
    [r] = out.results
    assert (r.end_state.value, r.reason) == ("fail", "tampering"), (r.end_state, r.reason, r.errors)
