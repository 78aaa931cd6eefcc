"""Agents: one adapter interface; oracle, nop, command, reference and the real products.

The names below are read from their modules on first use (PEP 562): ``assay agents --help``
imports :mod:`assay.agents.products` for the product names only, not every adapter's models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._optional import lazy_names

_FROM: dict[str, str] = {
    "AgentAdapter": "base", "AgentContext": "base", "AgentInfo": "base", "AgentOutcome": "base",
    "known_agents": "registry", "register_agent": "registry", "resolve_agent": "registry",
}
__all__ = ["AgentAdapter", "AgentContext", "AgentInfo", "AgentOutcome", "known_agents", "register_agent", "resolve_agent"]

if TYPE_CHECKING:
    from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome
    from assay.agents.registry import known_agents, register_agent, resolve_agent


__getattr__ = lazy_names("assay.agents", {name: f"assay.agents.{module}" for name, module in _FROM.items()})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
