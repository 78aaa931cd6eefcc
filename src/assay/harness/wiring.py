"""Typed wiring: what a service session hands the agent adapter (endpoints by name, keys, the
model, the world tool contract). Replaces string-keyed settings dicts read back by string."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any


def function_name(world_tool: str) -> str:
    """An OpenAI-legal function name for a world tool (``ledger.record_entry`` -> ``ledger__record_entry``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "__", world_tool)[:64]


@dataclass(frozen=True)
class GatewayWiring:
    """The model gateway as an attempt reaches it: the endpoint's name (the sandbox turns it into
    a URL), the per-attempt key and the model name the agent must ask for."""

    endpoint: str
    api_key: str
    model: str


@dataclass(frozen=True)
class WorldToolContract:
    """The world tools a task allows (name, description, input_schema; what ``GET /tools`` lists)
    and the world kinds they come from. Known before an attempt starts, so an agent can say
    whether it supports the task without importing the worlds."""

    tools: tuple[dict[str, Any], ...] = ()
    kinds: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [t["name"] for t in self.tools]

    def tool_list(self) -> list[dict[str, Any]]:
        return [dict(t) for t in self.tools]


@dataclass(frozen=True)
class ToolsWiring:
    """The world tool service as an attempt reaches it."""

    endpoint: str
    key: str
    contract: WorldToolContract = field(default_factory=WorldToolContract)


@dataclass(frozen=True)
class Wiring:
    """Everything the services of one attempt wire into the agent."""

    gateway: GatewayWiring | None = None
    tools: ToolsWiring | None = None

    def merge(self, other: Wiring) -> Wiring:
        """This wiring with ``other``'s parts added (a part set twice is a harness bug)."""
        for part in ("gateway", "tools"):
            if getattr(self, part) is not None and getattr(other, part) is not None:
                raise ValueError(f"two services wire the {part}")
        return replace(self, gateway=self.gateway or other.gateway, tools=self.tools or other.tools)

    @property
    def world_tools(self) -> WorldToolContract | None:
        return self.tools.contract if self.tools is not None and self.tools.contract.tools else None
