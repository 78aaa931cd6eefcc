"""The scripted model for a multi-step task (``fresh_sessions``): every step starts a new session, so
its conversation holds no assistant turn of the step before and the usual turn counter restarts.
``steps:`` gives one list of turns per step; the step is the one whose message the request's first
user message holds (the harness's words, never counted from calls)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from assay.errors import SpecError
from assay.gateway.backends.scripted import ScriptedSession
from assay.gateway.neutral import Message, ModelRequest
from assay.gateway.script import load_script

SCRIPT = """steps:
  - - text: "first step, turn 1"
    - text: "first step, turn 2"
  - - text: "second step, turn 1"
"""
STEPS = ("Write one into a.txt.", "Now write two into b.txt.")


def _ask(session: ScriptedSession, *messages: tuple[str, str]) -> str:
    req = ModelRequest(wire="openai-chat", model="m", messages=tuple(Message(role=r, text=t) for r, t in messages))
    return asyncio.run(session.complete(req, 1)).text


def test_each_step_is_answered_from_its_own_start(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text(SCRIPT)
    s = ScriptedSession(load_script(tmp_path / "model.yaml"), steps=STEPS)
    assert _ask(s, ("user", "Write one into a.txt.")) == "first step, turn 1"
    assert _ask(s, ("user", "Write one into a.txt."), ("assistant", "x")) == "first step, turn 2"
    # a fresh session for step 2: no assistant turn of step 1 in it; the agent may wrap the message
    assert _ask(s, ("system", "You are Pi."), ("user", "Context...\nNow write two into b.txt.\n")) == "second step, turn 1"
    assert "Done" in _ask(s, ("user", "Now write two into b.txt."), ("assistant", "x"))  # past the step's turns


def test_a_request_that_names_no_step_is_answered_with_why(tmp_path: Path) -> None:
    (tmp_path / "model.yaml").write_text(SCRIPT)
    s = ScriptedSession(load_script(tmp_path / "model.yaml"), steps=STEPS)
    assert "no step" in _ask(s, ("user", "something else"))


@pytest.mark.parametrize("doc", ["steps: []\n", "turns: [{text: a}]\nsteps: [[{text: b}]]\n", "{}\n"])
def test_a_script_with_neither_or_both_forms_is_refused(tmp_path: Path, doc: str) -> None:
    (tmp_path / "model.yaml").write_text(doc)
    with pytest.raises(SpecError):
        load_script(tmp_path / "model.yaml")
