"""The typed history as chat messages: real tool calls answered by tool messages, and a claim
fed back as the failed action it was."""

from __future__ import annotations

import json

from assay.agents.history import chat_messages, history_call_id
from assay.spec.conversation import UNPROVEN_CLAIM_ERROR, ConversationSpec


def _history(events: list[dict]) -> tuple:
    return tuple(ConversationSpec.model_validate({"history": events, "turns": [{"user": "x"}]}).history)


def test_tool_calls_become_assistant_calls_answered_by_tool_messages() -> None:
    msgs = chat_messages(_history([
        {"type": "user", "text": "book it"},
        {"type": "tool", "name": "ledger.record_entry", "arguments": {"amount": 5}, "result": {"id": "e3"}},
        {"type": "tool_failed", "name": "shell", "arguments": {"command": "ls"}, "error": "timeout"},
        {"type": "agent", "text": "done"}]), lambda n: n.replace(".", "__"))
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    call = msgs[1]["tool_calls"][0]
    assert call["id"] == history_call_id(1) and call["function"]["name"] == "ledger__record_entry"
    assert json.loads(call["function"]["arguments"]) == {"amount": 5}
    assert msgs[2] == {"role": "tool", "tool_call_id": history_call_id(1), "content": '{"id": "e3"}'}
    assert msgs[4]["content"] == "ERROR: timeout" and msgs[3]["tool_calls"][0]["function"]["name"] == "shell"


def test_a_claim_is_fed_back_as_a_failed_action_never_as_a_success() -> None:
    msgs = chat_messages(_history([
        {"type": "user", "text": "record the dinner"},
        {"type": "claim", "text": "Already recorded.", "name": "ledger.record_entry", "arguments": {"amount": 86}}]),
        lambda n: n)
    claim, answer = msgs[1], msgs[2]
    assert claim["role"] == "assistant" and claim["content"] == "Already recorded."
    assert claim["tool_calls"][0]["function"]["name"] == "ledger.record_entry"
    assert answer["role"] == "tool" and answer["content"] == "ERROR: " + UNPROVEN_CLAIM_ERROR
    assert not [m for m in msgs if m["role"] == "tool" and "ERROR" not in m["content"]]


def test_clarification_correction_and_approval_keep_their_speaker() -> None:
    msgs = chat_messages(_history([
        {"type": "clarification", "question": "Which category?"},
        {"type": "correction", "text": "that was wrong, it is dining"},
        {"type": "approval", "name": "ledger.delete_entry", "arguments": {"id": "e2"}, "decision": "denied",
         "note": "keep it"}]), lambda n: n)
    assert [(m["role"], m["content"]) for m in msgs] == [
        ("assistant", "Which category?"), ("user", "that was wrong, it is dining"),
        ("user", 'Denied: ledger.delete_entry {"id": "e2"} (keep it)')]
