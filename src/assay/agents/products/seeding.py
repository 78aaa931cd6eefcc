"""What the adapters that replay a typed history share: the history's tool names spelled as the
agent itself spells them, so the replayed calls are the agent's own tools (its shell, or the
world tool the way its MCP client names it), never prose."""

from __future__ import annotations

from assay.agents.history import ToolNamer


def tool_namer(to_neutral: dict[str, str], mcp_prefix: str | None, dot: str = "_") -> ToolNamer:
    """Neutral tools by the agent's native name (the first native tool providing it); world tools
    (``ledger.record_entry``) as ``<mcp_prefix>ledger<dot>record_entry`` when they come over MCP
    (the agent's MCP client spells the dot as ``dot``), else as they are (the shim's names)."""
    native: dict[str, str] = {}
    for own, neutral in to_neutral.items():
        native.setdefault(neutral, own)

    def name(tool: str) -> str:
        if tool in native:
            return native[tool]
        return f"{mcp_prefix}{tool.replace('.', dot)}" if mcp_prefix is not None else tool

    return name
