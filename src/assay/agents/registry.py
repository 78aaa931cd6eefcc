"""Agent adapters by name: one :class:`~assay.registry.Registry` (entry-point group ``assay.agents``).

A registered value is a factory ``config -> AgentAdapter`` (an adapter class is one). The
built-ins are the two validation agents, the reference agent and every product agent of
:data:`assay.agents.products.PRODUCTS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from assay.agents.base import AgentAdapter
from assay.errors import AgentUnavailable, SpecError
from assay.registry import Declared, Registry
from assay.spec.user_file import read_user_yaml

Factory = Callable[[dict], AgentAdapter]


def _builtins() -> dict[str, Declared]:
    from assay.agents.products import PRODUCTS

    table: dict[str, Declared] = {"nop": "assay.agents.builtin:NopAgent", "oracle": "assay.agents.builtin:OracleAgent",
                                  "reference": "assay.agents.reference.adapter:ReferenceAgent"}
    for name in PRODUCTS.names():
        table[name] = _product_factory(name)
    return table


def _product_factory(name: str) -> Factory:
    def make(cfg: dict) -> AgentAdapter:
        from assay.agents.products import PRODUCTS

        return PRODUCTS.get(name)(cfg)
    return make


AGENTS: Registry[Factory] = Registry("agent", "assay.agents", _builtins)


def register_agent(name: str, factory: Factory, *, replace: bool = False) -> Factory:
    """Register a third-party agent factory (or adapter class) under ``name``."""
    return AGENTS.register(name, factory, replace=replace)


def register_product(name: str, cls: type[AgentAdapter], *, replace: bool = False) -> type[AgentAdapter]:
    """Register a third-party product agent: a product (``assay agents list``) and an agent at once."""
    from assay.agents.products import PRODUCTS

    PRODUCTS.register(name, cls, replace=replace)
    AGENTS.register(name, cls, replace=replace)
    return cls


def known_agents() -> dict[str, Factory]:
    """Every agent, built-in and third-party, by name."""
    return AGENTS.as_dict()


def resolve_agent(ref: str, config: dict | None = None) -> AgentAdapter:
    """An adapter from a registered name or a path to a command-agent YAML file."""
    path = Path(ref)
    if ref.endswith((".yaml", ".yml")) or path.is_file():
        from assay.agents.command import CommandAgent

        if not path.is_file():
            raise AgentUnavailable(f"agent file {ref!r} not found (fix: pass a registered agent name or an existing YAML file)")
        try:
            data = read_user_yaml(path, what="agent file", fix="a command-agent YAML file, docs/agents.md").data
        except SpecError as e:
            raise AgentUnavailable(e.problems[0].render()) from None
        if not isinstance(data, dict):
            raise AgentUnavailable(f"{ref}: top level must be a mapping")
        return CommandAgent(data, source=path)
    if ref not in AGENTS:
        raise AGENTS.unknown(ref, also="or a command-agent YAML file")
    return AGENTS.get(ref)(config or {})
