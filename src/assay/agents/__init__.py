"""Agents: one adapter interface; oracle, nop, command, reference and the real products."""

from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome
from assay.agents.registry import known_agents, register_agent, resolve_agent

__all__ = ["AgentAdapter", "AgentContext", "AgentInfo", "AgentOutcome", "known_agents", "register_agent", "resolve_agent"]
