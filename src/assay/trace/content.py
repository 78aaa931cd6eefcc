"""The plain text of a message's content, one function for every place that reads one: the
gateway's wire formats and the product agents' session files (both hostile input).

Content comes as a string, or as a list of typed blocks (``{"type": "text", "text": ...}``,
OpenAI's ``output_text``, Anthropic's ``tool_result`` holding content of its own). Callers
differ only in how blocks are joined and which block types count as text."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

#: the block types a session file's text is made of (an untyped block with ``text`` counts too)
TEXT_BLOCKS: frozenset[str | None] = frozenset({"text", "output_text", None})


def content_text(content: Any, *, sep: str = "\n", kinds: Collection[str | None] | None = None) -> str:
    """Plain text of ``content``: blocks' texts joined by ``sep``. With ``kinds``, only blocks of
    those types count; without, every block with a ``text`` string does, and a ``tool_result``
    block contributes its own content's text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(part for p in content if (part := _block_text(p, sep, kinds)) is not None)
    return json.dumps(content, default=str)


def _block_text(block: Any, sep: str, kinds: Collection[str | None] | None) -> str | None:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return None
    text = block.get("text")
    if kinds is not None:
        return str(text) if block.get("type") in kinds and "text" in block else None
    if isinstance(text, str):
        return text
    if block.get("type") == "tool_result":
        return content_text(block.get("content"), sep=sep)
    return None


__all__ = ["TEXT_BLOCKS", "content_text"]
