"""The scripted backend picks its turn from the conversation, robust to what real agents add."""

from __future__ import annotations

import asyncio

from assay.gateway.backends.scripted import ScriptedSession
from assay.gateway.neutral import Message, ModelRequest, ToolCall, ToolDef
from assay.gateway.script import ModelScript

SCRIPT = ModelScript.model_validate({"turns": [
    {"tool_calls": [{"name": "shell", "arguments": {"command": "a"}}]},
    {"tool_calls": [{"name": "shell", "arguments": {"command": "b"}}]},
    {"text": "Finished."}]})
TOOLS = (ToolDef("exec"),)


def ask(*messages: Message, tools=TOOLS, script=SCRIPT):
    return asyncio.run(ScriptedSession(script).complete(ModelRequest("openai-chat", "m", tuple(messages), tools), 1))


def assistant(cmd: str) -> Message:
    return Message("assistant", tool_calls=(ToolCall("c", "exec", {"command": cmd}),))


def test_turns_follow_assistant_messages_not_call_count() -> None:
    assert ask(Message("user", "go")).tool_calls[0].arguments == {"command": "a"}
    # OpenClaw-style synthetic user messages between turns do not shift the script
    conv = (Message("user", "[Sun] go"), assistant("a"), Message("tool", "ok", tool_call_id="c"),
            Message("user", "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> x <<<END_OPENCLAW_INTERNAL_CONTEXT>>>"))
    r = ask(*conv)
    assert r.tool_calls[0].arguments == {"command": "b"} and r.finish_reason == "tool_calls"
    r = ask(*conv, assistant("b"), Message("tool", "ok"))
    assert r.text == "Finished." and not r.tool_calls and r.finish_reason == "stop"


def test_past_the_end_answers_final_text() -> None:
    conv = [Message("user", "go")] + [assistant(str(i)) for i in range(5)]
    assert ask(*conv).text == "Done."


def test_side_request_without_tools_gets_text_only() -> None:
    r = ask(Message("user", "Write a title for this session"), tools=())
    assert not r.tool_calls and r.text and r.extra["note"].startswith("no tools offered")


def test_unmappable_tool_is_a_visible_error() -> None:
    r = ask(Message("user", "go"), tools=(ToolDef("read"),))
    assert not r.tool_calls and "does not offer" in r.extra["error"]


def test_missing_script_answers_with_the_problem() -> None:
    r = asyncio.run(ScriptedSession(None, "task 'x' has no model_script").complete(
        ModelRequest("openai-chat", "m", (Message("user", "go"),)), 1))
    assert "no model_script" in r.text and r.usage.counted
