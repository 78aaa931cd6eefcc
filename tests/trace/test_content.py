"""One function gives the plain text of message content for the gateway's wire formats and for
the product agents' session files; the two differ only in joiner and in which blocks count."""

from __future__ import annotations

from assay.agents.products.normalized import text_of
from assay.gateway.wire.anthropic import AnthropicWire
from assay.trace.content import TEXT_BLOCKS, content_text


def test_wire_content_joins_every_text_block_and_opens_tool_results() -> None:
    content = ["a", {"type": "text", "text": "b"}, {"type": "thinking", "thinking": "secret"},
               {"type": "tool_result", "content": [{"type": "text", "text": "c"}, "d"]}, {"type": "image"}]
    assert content_text(content) == "a\nb\nc\nd"


def test_session_content_runs_only_text_blocks_together() -> None:
    content = [{"type": "text", "text": "a"}, {"type": "output_text", "text": "b"}, {"text": 3},
               {"type": "tool_result", "content": "not text"}, {"type": "toolCall", "text": "not text either"}]
    assert content_text(content, sep="", kinds=TEXT_BLOCKS) == text_of(content) == "ab3"


def test_odd_content_is_text_not_a_crash() -> None:
    assert content_text(None) == "" and text_of(None) == ""
    assert content_text("plain") == "plain"
    assert content_text({"unexpected": [1, 2]}) == '{"unexpected": [1, 2]}'
    assert content_text([None, 7, {"text": None}]) == ""


def test_the_anthropic_wire_reads_tool_results_through_it() -> None:
    req = AnthropicWire().parse({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "42"}, {"type": "text", "text": "ok"}]}]}]})
    assert [(m.role, m.text, m.tool_call_id) for m in req.messages] == [("tool", "42\nok", "t1")]
