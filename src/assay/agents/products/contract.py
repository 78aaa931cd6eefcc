"""The tool contract, per agent: which native switch provides which neutral tools.

A task allows neutral tools (``shell``, ``read``, ``write``, ``edit``, ``list``; world tools
are ``<world>.<tool>``). Each agent can only turn its tools on and off in groups (Pi and
OpenClaw per tool, Hermes per toolset, DSH per plugin). A task is runnable on an agent only
when its allowed set is exactly a union of whole groups: the agent is then restricted to
those groups. Anything else is ``unsupported`` (the trial is skipped): never run with more
tools, or other tools, than the task allows.
"""

from __future__ import annotations

from dataclasses import dataclass

NEUTRAL_TOOLS = frozenset({"shell", "read", "write", "edit", "list"})


@dataclass(frozen=True)
class ToolGroup:
    """One native switch (or set of switches always used together) and the neutral tools it provides."""

    switches: tuple[str, ...]
    neutral: frozenset[str]


@dataclass(frozen=True)
class ToolContract:
    agent: str
    groups: tuple[ToolGroup, ...]

    def select(self, allowed: list[str] | tuple[str, ...]) -> tuple[list[str], str | None]:
        """(native switches to enable, None) or ([], "unsupported: why")."""
        wanted = set(allowed)
        world = sorted(t for t in wanted if "." in t)
        if world:
            return [], f"unsupported: {self.agent} is not wired to world tools {world} (needs MCP)"
        unknown = sorted(wanted - NEUTRAL_TOOLS)
        if unknown:
            return [], f"unsupported: tools {unknown} are not in the tool contract"
        switches: list[str] = []
        covered: set[str] = set()
        for g in self.groups:
            inside = g.neutral & wanted
            if not inside:
                continue
            if inside != g.neutral:
                extra = sorted(g.neutral - wanted)
                return [], (f"unsupported: {self.agent} offers {sorted(inside)} only together with {extra} "
                            f"({'/'.join(g.switches)}), which the task does not allow")
            switches.extend(g.switches)
            covered |= g.neutral
        missing = sorted(wanted - covered)
        if missing:
            return [], f"unsupported: {self.agent} has no native tool for {missing}"
        return switches, None


def _single(pairs: dict[str, str]) -> tuple[ToolGroup, ...]:
    return tuple(ToolGroup((native,), frozenset({neutral})) for native, neutral in pairs.items())


PI = ToolContract("pi", _single({"bash": "shell", "read": "read", "write": "write", "edit": "edit", "ls": "list"}))

OPENCLAW = ToolContract("openclaw", (
    ToolGroup(("exec", "process"), frozenset({"shell"})),
    *_single({"read": "read", "write": "write", "edit": "edit", "ls": "list"}),
))

HERMES = ToolContract("hermes", (
    ToolGroup(("terminal",), frozenset({"shell"})),
    ToolGroup(("file",), frozenset({"read", "write", "edit", "list"})),
))

DSH = ToolContract("dsh", (
    ToolGroup(("tool-bash",), frozenset({"shell"})),
    ToolGroup(("tool-fs",), frozenset({"read", "write", "edit"})),
    ToolGroup(("tool-fs-search",), frozenset({"list"})),
))
