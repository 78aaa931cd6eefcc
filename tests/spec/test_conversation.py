"""The conversation model of task.yaml: typed history events, scripted turns, their checks, and
clear errors for what cannot be a conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.errors import SpecError
from assay.spec.conversation import Claim, ConversationSpec, Correction, ToolFailed
from assay.spec.load import load_suite
from assay.spec.task import TaskSpec
from tests.conftest import ROOT, write_suite, write_task

EXAMPLE = ROOT / "examples" / "conversations"


def _task(conversation: dict, predicates: list | None = None) -> TaskSpec:
    return TaskSpec.model_validate({"id": "t", "category": "c", "conversation": conversation,
                                    "predicates": predicates or [{"id": "p", "kind": "world_unchanged"}]})


def test_history_events_are_typed_by_their_type_field() -> None:
    spec = _task({"history": [
        {"type": "correction", "text": "that was wrong, it is dining"},
        {"type": "tool_failed", "name": "ledger.record_entry", "arguments": {"amount": 1}, "error": "timeout"},
        {"type": "claim", "text": "Already recorded.", "name": "ledger.record_entry"}],
        "turns": [{"user": "go on"}]})
    conv = spec.conversation
    assert [type(e) for e in conv.history] == [Correction, ToolFailed, Claim]
    assert conv.turn_limit == 1


def test_unknown_history_type_and_missing_fields_are_refused() -> None:
    with pytest.raises(ValidationError, match="tag"):
        _task({"history": [{"type": "telepathy", "text": "x"}], "turns": [{"user": "hi"}]})
    with pytest.raises(ValidationError, match="error"):
        _task({"history": [{"type": "tool_failed", "name": "shell"}], "turns": [{"user": "hi"}]})


def test_first_turn_cannot_be_keyed_on_an_agent_turn_that_never_happened() -> None:
    with pytest.raises(ValidationError, match=r"turns\[0\] cannot have `reply`"):
        _task({"turns": [{"reply": [{"when": {"called": "user.refuse"}, "user": "ok"}]}]})


def test_later_turn_needs_something_to_say_and_one_way_to_say_it() -> None:
    with pytest.raises(ValidationError, match=r"turns\[1\] needs `user`"):
        _task({"turns": [{"user": "a"}, {}]})
    with pytest.raises(ValidationError, match="either `user` or `reply`"):
        _task({"turns": [{"user": "a"}, {"user": "b", "otherwise": "c"}]})
    with pytest.raises(ValidationError, match="at least one of"):
        _task({"turns": [{"user": "a"}, {"reply": [{"when": {}, "user": "x"}]}]})


def test_a_conversation_needs_turns_or_a_simulator() -> None:
    with pytest.raises(ValidationError, match="scripted `turns` or a `simulator`"):
        ConversationSpec.model_validate({"history": [{"type": "user", "text": "hi"}]})
    sim = ConversationSpec.model_validate({"simulator": {"persona": "a busy user"}})
    assert sim.turn_limit == 4  # the default limit of a model-driven conversation


def test_turn_predicates_are_typed_and_their_ids_unique_across_the_task() -> None:
    spec = _task({"turns": [{"predicates": [{"id": "t1", "kind": "tool_called", "tool": "user.refuse"}]},
                            {"user": "b", "predicates": [{"id": "t2", "kind": "world_unchanged"}]}]})
    preds = spec.conversation.turn_predicates()
    assert sorted(preds) == [1, 2] and preds[1][0].kind == "tool_called"
    with pytest.raises(ValidationError, match="'p' is used twice"):
        _task({"turns": [{"predicates": [{"id": "p", "kind": "world_unchanged"}]}]})


def test_a_broken_conversation_task_names_the_file_and_the_field(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s", categories=[{"id": "c"}])
    write_task(s, "bad", task={"category": "c", "predicates": [{"id": "p", "kind": "world_unchanged"}],
                               "conversation": {"history": [{"type": "claim", "text": "done"}], "turns": [{"user": "x"}]}})
    with pytest.raises(SpecError) as e:
        load_suite(s)
    [problem] = e.value.problems
    assert problem.file.endswith("bad/task.yaml") and "conversation.history.0.claim.name" in problem.field


def test_the_example_suite_loads_with_every_kind_of_history_event() -> None:
    suite = load_suite(EXAMPLE)
    assert len(suite.tasks) >= 6
    kinds = {type(e).__name__ for t in suite.tasks for e in t.spec.conversation.history}
    assert {"UserSaid", "AgentSaid", "ToolDone", "ToolFailed", "Clarification", "Approval", "Correction",
            "Claim"} <= kinds
