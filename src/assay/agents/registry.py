"""Agent adapters by name. Third parties register through the ``assay.agents`` entry point."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import Callable

import yaml

from assay._optional import optional_import
from assay.agents.base import AgentAdapter
from assay.errors import AgentUnavailable

Factory = Callable[[dict], AgentAdapter]
_AGENTS: dict[str, Factory] = {}


def register_agent(name: str, factory: Factory) -> None:
    _AGENTS[name] = factory


def _load_builtins() -> None:
    from assay.agents.builtin import NopAgent, OracleAgent

    register_agent("nop", lambda cfg: NopAgent(cfg))
    register_agent("oracle", lambda cfg: OracleAgent(cfg))
    for optional in ("assay.agents.reference", "assay.agents.products"):
        mod = optional_import(optional)
        if mod is not None:
            mod.register(register_agent)
    for ep in entry_points(group="assay.agents"):
        register_agent(ep.name, ep.load())


def known_agents() -> dict[str, Factory]:
    if not _AGENTS:
        _load_builtins()
    return dict(_AGENTS)


def resolve_agent(ref: str, config: dict | None = None) -> AgentAdapter:
    """An adapter from a registered name or a path to a command-agent YAML file."""
    path = Path(ref)
    if ref.endswith((".yaml", ".yml")) or path.is_file():
        from assay.agents.command import CommandAgent

        if not path.is_file():
            raise AgentUnavailable(f"agent file {ref!r} not found (fix: pass a registered agent name or an existing YAML file)")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise AgentUnavailable(f"{ref}: not valid YAML: {e}") from None
        if not isinstance(data, dict):
            raise AgentUnavailable(f"{ref}: top level must be a mapping")
        return CommandAgent(data, source=path)
    table = known_agents()
    if ref not in table:
        raise AgentUnavailable(f"unknown agent {ref!r}; known: {', '.join(sorted(table))} or a command-agent YAML file")
    return table[ref](config or {})
