"""The tool contract of a task, without running anything: what ``GET /tools`` would list."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from assay.harness.wiring import WorldToolContract
from assay.spec.task import TaskSpec
from assay.worlds.dispatch import tool_allowed
from assay.worlds.registry import world_kinds
from assay.worlds.session import open_worlds


def task_tool_contract(spec: TaskSpec) -> list[dict[str, Any]]:
    """Every world tool the task allows, with its JSON Schema."""
    with tempfile.TemporaryDirectory(prefix="assay-contract-") as tmp:
        worlds = open_worlds(spec, Path(tmp))
        try:
            tools = sorted((t for w in worlds.values() for t in w.tools()), key=lambda t: t.name)
            return [t.public() for t in tools if tool_allowed(spec, t.name)]
        finally:
            for w in worlds.values():
                w.db.close()


def world_tool_contract(spec: TaskSpec) -> WorldToolContract:
    """The task's world tool contract as the harness wires it into an agent."""
    return WorldToolContract(tools=tuple(task_tool_contract(spec)), kinds=tuple(world_kinds()))
