"""The optional extras a run needs, checked before anything is written or any trial starts: a
missing one made every trial a ``harness_crash`` (66 of 66) instead of one line at the start."""

from __future__ import annotations

from assay._optional import missing_extra
from assay.errors import UsageError
from assay.run.plan import PlannedTrial
from assay.spec.load import LoadedSuite


def needed_extras(suite: LoadedSuite, plan: list[PlannedTrial], executor: str) -> dict[str, str]:
    """extra -> why this run needs it."""
    needs: dict[str, str] = {}
    planned = {t.task_id for t in plan}
    worlds = sorted(t.id for t in suite.tasks if t.id in planned and t.spec.worlds is not None)
    if worlds:  # the world tool server speaks MCP beside its native HTTP routes
        needs["mcp"] = f"world task(s) {', '.join(worlds[:3])}{' ...' if len(worlds) > 3 else ''}"
    if executor == "ray":
        needs["ray"] = "--executor ray"
    return needs


def check_extras(suite: LoadedSuite, plan: list[PlannedTrial], executor: str) -> None:
    """Refuse the run (exit 2, nothing written) when an extra it needs is not installed."""
    problems = [f"{why} {missing}" for extra, why in needed_extras(suite, plan, executor).items()
                if (missing := missing_extra(extra)) is not None]
    if problems:
        raise UsageError("; ".join(problems))
