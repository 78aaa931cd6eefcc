"""The wire formats the gateway serves, by name (each format module imports the interface;
this module imports the formats, so neither imports the other back)."""

from __future__ import annotations

from assay.gateway.wire.anthropic import AnthropicWire
from assay.gateway.wire.base import Wire
from assay.gateway.wire.openai_chat import OpenAIChatWire
from assay.gateway.wire.openai_responses import OpenAIResponsesWire


def wires() -> dict[str, Wire]:
    return {w.name: w for w in (OpenAIChatWire(), OpenAIResponsesWire(), AnthropicWire())}
