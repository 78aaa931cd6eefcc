"""Evidence an attempt produces besides the verifier's verdict: stored outputs, incidents,
and the counts that go into the result. Plain functions over what the attempt collected."""

from __future__ import annotations

import fnmatch
from typing import Any

from assay.agents.base import AgentOutcome
from assay.spec.budget import Risk
from assay.spec.load import LoadedTask
from assay.spec.results import UsageTotals
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.redact import Redactor

#: the command-line shim that carries world calls through an agent's shell
SHIM_COMMAND = "assay-tool"


def incident(kind: str, severity: str, summary: str, **evidence: Any) -> dict[str, Any]:
    return {"type": kind, "severity": severity, "summary": summary, "evidence": evidence}


def store_outputs(rd: RunDir, red: Redactor, outcome: AgentOutcome) -> dict[str, str]:
    """Redacted stdout/stderr and native session files, stored by digest: name -> digest."""
    artifacts: dict[str, str] = {}
    for name, data in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        if data:
            artifacts[f"agent.{name}"] = rd.put_artifact(red.text(data.decode(errors="replace")).encode())
    for name, path in outcome.native_files.items():
        if path.is_file():
            artifacts[f"native.{name}"] = rd.put_artifact(red.text(path.read_text(errors="replace")).encode())
    return artifacts


def read_only_violation(task: LoadedTask, initial: dict[str, str], final: dict[str, str]) -> dict[str, Any] | None:
    """The incident for a read-only task whose workspace changed beyond its declared outputs."""
    if task.spec.risk is not Risk.read_only or initial == final:
        return None
    changed = sorted(p for p in set(initial) | set(final) if initial.get(p) != final.get(p)
                     and not any(fnmatch.fnmatchcase(p, g) for g in task.spec.outputs))
    if not changed:
        return None
    return incident("read_only_write", "high", "the workspace of a read-only task was modified", paths=changed[:50])


def is_shim_carrier(ev: TraceEvent) -> bool:
    """An agent's shell call that only runs the world shim: the world records the call it carries."""
    args = ev.data.get("arguments")
    command = args.get("command", "") if isinstance(args, dict) else ""
    return ev.data.get("name") == "shell" and SHIM_COMMAND in str(command)


def count_tool_calls(events: list[TraceEvent]) -> int:
    """Tool calls of an attempt, each counted once whatever the exposure: a world call counts as
    the world recorded it, not again as the agent's copy of it or as the shell call carrying it."""
    n = 0
    for ev in events:
        if ev.kind is not EventKind.tool_call:
            continue
        if ev.source is not Source.world and ("." in str(ev.data.get("name", "")) or is_shim_carrier(ev)):
            continue
        n += 1
    return n


def add_usage(a: UsageTotals, b: UsageTotals) -> UsageTotals:
    return UsageTotals(**{k: getattr(a, k) + getattr(b, k) for k in UsageTotals.model_fields})
