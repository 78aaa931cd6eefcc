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
from assay.agents.reference_loop import UNANSWERED
from assay.run import RunOptions, start_run
from assay.store.rundir import RunDir
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


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("resume")
    run = root / "run"
    start_run(RunOptions(suite=only(root, KILLS), out=run, agents=["reference"], tasks=["book-entry"],
                         model="scripted"))
    return run


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(KILLS))
def test_the_reference_agent_resumes_its_own_conversation(reference_run: Path, variant: str) -> None:
    trial = f"book-entry.{variant}.reference.r1"
    r = _final_results(reference_run)[trial]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
    (fault,) = r["extra"]["process_faults"]
    assert (fault["restart"], fault["session"], fault["run"]) == ("resume", "messages.json", 2), fault
    evs = trace(reference_run, trial)
    said = [e["data"]["text"] for e in evs if (e["source"], e["kind"]) == ("harness", "user_message")]
    assert len(said) == 2 and said[1] == RESUME_NOTE  # the prompt once; the restart was given the note
    first = next(e for e in after_fault(evs) if e["kind"] == "model_request")
    assert first["data"]["assistant_turns"] == 1 and first["data"]["last_text"] == RESUME_NOTE
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
    from assay.agents.reference_loop import close_unanswered

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
