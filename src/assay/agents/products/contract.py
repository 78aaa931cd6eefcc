"""The tool contract, per agent: which native switch provides which neutral tools.

A task allows neutral tools (``shell``, ``read``, ``write``, ``edit``, ``list``; world tools
are ``<world>.<tool>``). Each agent can only turn its tools on and off in groups (Pi and
OpenClaw per tool, Hermes per toolset, DSH per plugin). A task is runnable on an agent only
when its allowed set is exactly a union of whole groups: the agent is then restricted to
those groups. Anything else is ``unsupported`` (the trial is skipped): never run with more
tools, or other tools, than the task allows.

World tools reach a product agent in one of two ways (its *exposure*). Over MCP (``mcp``), the
agent's own MCP client connects to the tool service and the model sees the world tools as real
tools: nothing else is needed and the contract stays exact. Through the ``assay-tool`` shell
shim (``shim``, for agents whose MCP client does not work here), a task that allows any world
tool needs the agent's shell group: when the task itself does not allow ``shell``, the shell is
enabled anyway, as the shim's carrier. A shell cannot be restricted to one command, so this is
disclosed (``Selection.record()``, in the trace and the prompt note) rather than hidden. Either
way the world side stays exact: the tool service offers only the task's world tools.

When the agent has its shell and an allowed file tool comes only in a group with tools the task
does not allow (``read`` in Hermes' ``file`` toolset), that group stays off and the shell does
the file tool's job (the scripted model renders such calls as shell commands): the agent gets
fewer tools than allowed, never more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.agents.products import native_browser

NEUTRAL_TOOLS = frozenset({"shell", "read", "write", "edit", "list", native_browser.BROWSER})
#: how world tools reach a product agent: its own MCP client, or the shell shim (assay.worlds.shim)
EXPOSURES = ("mcp", "shim")


def is_world_tool(name: str) -> bool:
    """``<world>.<tool>`` names (and globs such as ``ledger.*``) are world tools."""
    return "." in name


@dataclass(frozen=True)
class ToolGroup:
    """One native switch (or set of switches always used together) and the neutral tools it provides."""

    switches: tuple[str, ...]
    neutral: frozenset[str]


@dataclass(frozen=True)
class Selection:
    """What an agent gets for one task: the native switches, and what they really expose."""

    switches: tuple[str, ...] = ()
    neutral: frozenset[str] = frozenset()  # the neutral tools the agent effectively has
    world: tuple[str, ...] = ()  # world tools (or patterns) the task allows
    shell_for_shim: bool = False  # the shell is on only because world tools need the shim
    why: str | None = None  # "unsupported: ..." when the task cannot run on this agent
    task_tools: tuple[str, ...] = field(default=())
    via_shell: frozenset[str] = frozenset()  # allowed file tools left to the shell: their group brings more
    exposure: str = "shim"  # how the world tools reach the agent (EXPOSURES)

    def record(self) -> dict[str, Any]:
        """The effective tool set, as disclosed in the attempt's trace."""
        return {"task_tools": list(self.task_tools), "native_switches": list(self.switches),
                "effective_neutral": sorted(self.neutral), "via_shell": sorted(self.via_shell),
                "world_tools": list(self.world), "world_exposure": self.exposure if self.world else None,
                "shell_for_shim": self.shell_for_shim}


@dataclass(frozen=True)
class ToolContract:
    agent: str
    groups: tuple[ToolGroup, ...]
    #: why the product's own browser cannot run a task here, when no group of it provides ``browser``
    #: (docs/browser.md, "Products' own browsers"); empty: it has none
    own_browser: str = ""

    def plan(self, allowed: list[str] | tuple[str, ...], world_tools: list[str] | tuple[str, ...] = (),
             exposure: str = "shim") -> Selection:
        """The agent's switches for a task allowing ``allowed``; ``world_tools`` adds world tools
        the task offers without listing them (``user.*`` when behaviour is judged); ``exposure``
        says how world tools reach the agent (over ``mcp`` they need no shell)."""
        if exposure not in EXPOSURES:
            raise ValueError(f"world tool exposure must be one of {EXPOSURES}, not {exposure!r}")
        wanted = set(allowed)
        patterns = {t for t in wanted if is_world_tool(t)}
        world = sorted(set(world_tools)) or sorted(patterns)  # the offered names, else the task's patterns
        task_tools = tuple(allowed)
        wanted -= patterns
        unknown = sorted(wanted - NEUTRAL_TOOLS)
        if native_browser.BROWSER in wanted and not any(native_browser.BROWSER in g.neutral for g in self.groups):
            return Selection(why=native_browser.reason(self.agent, self.own_browser), task_tools=task_tools)
        if unknown:
            return Selection(why=f"unsupported: tools {unknown} are not in the tool contract", task_tools=task_tools)
        shim = bool(world) and exposure == "shim"
        shell_for_shim = shim and "shell" not in wanted
        if shim and not any("shell" in g.neutral for g in self.groups):
            return Selection(why=f"unsupported: {self.agent} has no shell to run the assay-tool shim for world "
                                 f"tools {world}", task_tools=task_tools, exposure=exposure)
        if shim:
            wanted.add("shell")
        switches: list[str] = []
        covered: set[str] = set()
        via_shell: set[str] = set()
        has_shell = "shell" in wanted and any(g.neutral <= wanted and "shell" in g.neutral for g in self.groups)
        for g in self.groups:
            inside = g.neutral & wanted
            if not inside:
                continue
            if inside != g.neutral:
                if has_shell and "shell" not in g.neutral:
                    via_shell |= inside  # the shell does it (cat, ls...); never a group with more tools
                    continue
                extra = sorted(g.neutral - wanted)
                return Selection(why=f"unsupported: {self.agent} offers {sorted(inside)} only together with {extra} "
                                     f"({'/'.join(g.switches)}), which the task does not allow", task_tools=task_tools)
            switches.extend(g.switches)
            covered |= g.neutral
        missing = sorted(wanted - covered - via_shell)
        if missing:
            return Selection(why=f"unsupported: {self.agent} has no native tool for {missing}", task_tools=task_tools)
        return Selection(tuple(switches), frozenset(covered), tuple(world), shell_for_shim, None, task_tools,
                         frozenset(via_shell), exposure)

    def select(self, allowed: list[str] | tuple[str, ...]) -> tuple[list[str], str | None]:
        """(native switches to enable, None) or ([], "unsupported: why")."""
        s = self.plan(allowed)
        return (list(s.switches), None) if s.why is None else ([], s.why)


def single(pairs: dict[str, str]) -> tuple[ToolGroup, ...]:
    """One native tool per neutral tool (``{"bash": "shell", ...}``), for a product whose switches are per tool."""
    return tuple(ToolGroup((native,), frozenset({neutral})) for native, neutral in pairs.items())
