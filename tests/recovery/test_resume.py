"""A restart after a process fault continues the killed run's own session where the product can
(docs/recovery.md): the reference agent's message list, Pi's JSONL session. The restarted agent
sees the conversation so far, the call whose answer it never read included (closed with an error
result), and is given the resume note instead of the prompt; each fault entry says ``resume`` (and
the session) or ``fresh`` (and why). The scripted model answers by the conversation's position,
so a resumed agent makes one write after the kill where a fresh one would make two."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from assay.agents.base import RESUME_NOTE
from assay.agents.reference.loop import UNANSWERED
from assay.run import RunOptions, start_run
from assay.store.rundir import RunDir
from tests.recovery.command_agents import BOOK, command_agent
from tests.recovery.test_recovery_e2e import _final_results

SUITE = Path(__file__).resolve().parents[2] / "examples" / "recovery"
KILLS = {"fault-agent-killed", "fault-sandbox-restart"}


def only(root: Path, keep: set[str], model: str | None = None) -> Path:
    """A copy of examples/recovery whose book-entry has only the ``keep`` variants (and a model script)."""
    suite = root / "suite"
    shutil.copytree(SUITE, suite)
    path = suite / "tasks" / "book-entry" / "task.yaml"
    spec = yaml.safe_load(path.read_text())
    spec["variants"] = [v for v in spec["variants"] if v["id"] in keep]
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    if model is not None:
        (suite / "tasks" / "book-entry" / "model.yaml").write_text(model)
    return suite


def trace(run: Path, trial: str) -> list[dict]:
    return [json.loads(line) for line in (run / "trials" / trial / "trace.jsonl").read_text().splitlines()]


def after_fault(events: list[dict]) -> list[dict]:
    at = next(i for i, e in enumerate(events) if e["kind"] == "fault_injected")
    return events[at + 1:]


def artifact(run: Path, result: dict, name: str) -> list[dict]:
    """An artifact of the attempt, as JSON lines."""
    path = RunDir.open(run).artifact_path(result["artifacts"][name])
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def resumed(run: Path, trial: str) -> tuple[dict, dict, list[dict]]:
    """The trial's final result, its one fault entry (a resumed restart) and its trace."""
    r = _final_results(run)[trial]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
    (fault,) = r["extra"]["process_faults"]
    assert (fault["restart"], fault["run"]) == ("resume", 2), fault
    return r, fault, trace(run, trial)


def killed_run(factory: pytest.TempPathFactory, agent: str) -> Path:
    """examples/recovery's two kill variants of book-entry, run by ``agent`` on the scripted model."""
    root = factory.mktemp(f"resume-{agent}")
    run = root / "run"
    start_run(RunOptions(suite=only(root, KILLS), out=run, agents=[agent], tasks=["book-entry"], model="scripted"))
    return run


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return killed_run(tmp_path_factory, "reference")


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(KILLS))
def test_the_reference_agent_resumes_its_own_conversation(reference_run: Path, variant: str) -> None:
    r, fault, evs = resumed(reference_run, f"book-entry.{variant}.reference.r1")
    assert fault["session"] == "messages.json"
    said = [e["data"]["text"] for e in evs if (e["source"], e["kind"]) == ("harness", "user_message")]
    assert len(said) == 2 and said[1] == RESUME_NOTE  # the prompt once; the restart was given the note
    first = next(e for e in after_fault(evs) if e["kind"] == "model_request")
    assert first["data"]["assistant_turns"] == 1 and first["data"]["last_text"] == RESUME_NOTE
    assert first["data"]["messages"] == 5  # system, prompt, the killed call, its (error) result, the note
    # the killed write, then one write of the resumed run (a replay): a fresh run would write twice more
    writes = [e for e in evs if (e["source"], e["kind"]) == ("world", "tool_call")]
    assert len(writes) == 2 and r["extra"]["duplicate_side_effects"] == 0


@pytest.mark.slow
def test_the_resumed_run_sees_the_unanswered_call(reference_run: Path) -> None:
    trial = "book-entry.fault-agent-killed.reference.r1"
    r = _final_results(reference_run)[trial]
    # what the resumed run sent the model: the killed write is already its assistant turn
    sent = [x["request"]["assistant_turns"] for x in artifact(reference_run, r, "gateway.session")]
    assert sent[0] == [] and len(sent) == 3 and len(sent[1]) == 1, sent
    ((name, args),) = sent[1][0]["calls"]
    assert name == "ledger__record_entry" and args["idempotency_key"] == "lunch-2026-04-02"
    # the loop closed the unanswered call with an error result before it asked the model
    session = artifact(reference_run, r, "native.reference-session.r2")
    resumed = next(x for x in session if x["type"] == "resume")
    assert resumed["unanswered"] == ["call_0_0"]
    start = next(x for x in session if x["type"] == "start")
    assert start["resumed"] == 3  # the prompt, the killed call, its error result


def test_a_message_list_closes_every_unanswered_call() -> None:
    from assay.agents.reference.loop import close_unanswered

    call = lambda i: {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}  # noqa: E731
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},
               {"role": "tool", "tool_call_id": "a", "content": "ok"},
               {"role": "user", "content": "more"},
               {"role": "assistant", "content": None, "tool_calls": [call("c")]}]
    out, closed = close_unanswered(history)
    assert closed == ["b", "c"]
    assert [(m["role"], m.get("tool_call_id"), m.get("content")) for m in out] == [
        ("user", None, "go"), ("assistant", None, None), ("tool", "a", "ok"), ("tool", "b", UNANSWERED),
        ("user", None, "more"), ("assistant", None, None), ("tool", "c", UNANSWERED)]
    assert close_unanswered(out) == (out, [])  # a well-formed list is left as it is


def pi_usable() -> str | None:
    from assay.agents.products import install
    from assay.sandbox.registry import backends

    if "bwrap" not in backends() or not backends()["bwrap"]().status().usable:
        return "the bubblewrap sandbox is not usable here"
    if install.find("pi") is None:
        return "pi is not installed (run: assay agents install pi, or scripts/install-agents.sh)"
    return None


@pytest.fixture(scope="module")
def pi_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = pi_usable()
    if why:
        pytest.skip(why)
    return killed_run(tmp_path_factory, "pi")


@pytest.mark.slow
@pytest.mark.agents
@pytest.mark.parametrize("variant", sorted(KILLS))
def test_pi_resumes_its_own_session(pi_run: Path, variant: str) -> None:
    r, fault, evs = resumed(pi_run, f"book-entry.{variant}.pi.r1")
    sessions = [n for n in r["artifacts"] if n.startswith("native.pi.")]
    assert len(sessions) == 1 and fault["session"] in sessions[0]  # one session, continued, not a second one
    ran = [e["data"] for e in evs if e["kind"] == "log" and e["data"].get("phase") == "agent_run"]
    assert ran[-1]["resumed_session_kept"] is True
    first = next(e for e in after_fault(evs) if e["kind"] == "model_request")
    assert first["data"]["assistant_turns"] == 1 and RESUME_NOTE in first["data"]["last_text"], first
    assert first["data"]["messages"] == 5  # system, prompt, the killed call, Pi's own error result for it, the note
    writes = [e for e in evs if (e["source"], e["kind"]) == ("world", "tool_call")]
    assert len(writes) == 2 and r["extra"]["duplicate_side_effects"] == 0
    sent = [x["request"]["assistant_turns"] for x in artifact(pi_run, r, "gateway.session")]
    ((name, args),) = sent[1][0]["calls"]  # the killed write is in what the resumed Pi sent
    assert name.endswith("ledger_record_entry") and args["idempotency_key"] == "lunch-2026-04-02"


PLANTING = """\
turns:
  - tool_calls:
      - {name: shell, arguments: {command: "ln -s /etc/shadow \\"$HOME/sessions/planted.jsonl\\"; ls -l \\"$HOME/sessions\\""}}
  - tool_calls:
      - name: ledger.record_entry
        arguments: {date: "2026-04-02", amount: 58, currency: CNY, category: dining, merchant: "Harbor Dumpling House", idempotency_key: "lunch-2026-04-02"}
  - tool_calls:
      - name: ledger.record_entry
        arguments: {date: "2026-04-02", amount: 58, currency: CNY, category: dining, merchant: "Harbor Dumpling House", idempotency_key: "lunch-2026-04-02"}
  - text: "Booked."
"""


@pytest.mark.slow
@pytest.mark.agents
def test_a_link_planted_among_pis_sessions_makes_the_restart_fresh(tmp_path: Path) -> None:
    """Pi's shell plants a link where its sessions are, then its write is killed: the harness does
    not follow it to learn a session id; the restart is fresh, and says why."""
    why = pi_usable()
    if why:
        pytest.skip(why)
    suite = only(tmp_path, {"fault-agent-killed"}, model=PLANTING)
    task = suite / "tasks" / "book-entry" / "task.yaml"
    spec = yaml.safe_load(task.read_text())
    spec["tools"] = ["ledger.*", "shell"]
    task.write_text(yaml.safe_dump(spec, sort_keys=False))
    run = tmp_path / "run"
    start_run(RunOptions(suite=suite, out=run, agents=["pi"], tasks=["book-entry"], model="scripted"))
    r = _final_results(run)["book-entry.fault-agent-killed.pi.r1"]
    (fault,) = r["extra"]["process_faults"]
    assert fault["restart"] == "fresh" and "sessions/planted.jsonl" in fault["fresh_because"], fault
    assert "not followed" in fault["fresh_because"]
    said = [e["data"]["text"] for e in trace(run, r["trial_id"])
            if (e["source"], e["kind"]) == ("harness", "user_message")]
    assert len(said) == 2 and said[1] == said[0]  # fresh: the task's prompt again
    assert any(i["type"] == "agent_home_trap" for i in r["incidents"]), r["incidents"]


LINKER = command_agent("linker", """\
import json, os, pathlib, urllib.request
HOME = pathlib.Path(__file__).resolve().parent
""" + BOOK + """
if not (HOME / "planted").exists():  # run 1: its prompt file becomes a link to a host path, then it is killed
    (HOME / "prompt.md").unlink()
    os.symlink(CANARY, HOME / "prompt.md")
    (HOME / "planted").write_text("x")
book()
print("booked")
""")


@pytest.mark.slow
def test_a_restart_writes_nothing_through_a_link_the_agent_planted(tmp_path: Path) -> None:
    """Before the restart the harness used to write the agent's files into its home again: a
    prompt file the killed run replaced by a link to a host path would have been written through
    (as the harness's user). A restart now writes nothing into a home the agent has been in."""
    canary = tmp_path / "host-canary.txt"
    agent = tmp_path / "linker.yaml"
    agent.write_text(LINKER.replace("CANARY", repr(str(canary))))
    run = tmp_path / "run"
    start_run(RunOptions(suite=only(tmp_path, {"fault-agent-killed"}), out=run, agents=[str(agent)],
                         tasks=["book-entry"]))
    r = _final_results(run)["book-entry.fault-agent-killed.linker.r1"]
    (fault,) = r["extra"]["process_faults"]
    assert fault["applied"] and fault["restart"] == "fresh", fault
    assert not canary.exists()  # nothing was written through the link
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
