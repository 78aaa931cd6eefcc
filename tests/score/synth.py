"""Synthetic run directories: real files written through RunDir, for statistics tests and the benchmark."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from assay.records.manifest import AgentRecord, GatewayRecord, PlanRecord, RunManifest, SandboxRecord, TaskRecord
from assay.records.results import AttemptResult, EndState, PredicateResult, Timings, UsageTotals
from assay.spec.budget import Budget
from assay.store.rundir import RunDir


def trial_id(task: str, variant: str, agent: str, rep: int) -> str:
    return f"{task}.{variant}.{agent}.r{rep}"


def manifest(categories: dict[str, float], agents: list[str], trials: list[str], *, isolated: bool = False,
             run_id: str = "synthetic", capability_weights: dict[str, float] | None = None,
             suite: dict[str, Any] | None = None, task_digests: dict[str, tuple[str, str]] | None = None,
             gateway: GatewayRecord | None = None) -> RunManifest:
    """``task_digests`` maps a task id to (category, digest): recorded as the manifest's task records."""
    total = sum(categories.values())
    tasks = [TaskRecord(id=t, category=cat, version="1", digest=d, files={}, prompt_sha256="0" * 64, budget=Budget(),
                        risk="low", tools=[], variants=["base"]) for t, (cat, d) in (task_digests or {}).items()]
    return RunManifest(
        run_id=run_id, created_at=time.time(), harness={"assay": "test"},
        suite=suite or {"name": "synthetic", "version": "1"},
        categories={c: w / total for c, w in categories.items()}, tasks=tasks, gateway=gateway or GatewayRecord(),
        agents=[AgentRecord(name=a, kind="builtin") for a in agents],
        sandbox=SandboxRecord(backend="bwrap" if isolated else "host", isolated=isolated),
        plan=PlanRecord(trials=trials),
        score={"version": "1", "capability_weights": capability_weights or {
            "completion": 0.60, "tool_trajectory": 0.15, "reliability_recovery": 0.15, "evidence_operability": 0.10}},
    )


def attempt(task: str, category: str, agent: str, rep: int, state: str, *, attempt: int = 1, variant: str = "base",
            cost: float = 0.0, tokens: int = 0, tool_calls: int = 0, interventions: int = 0, wall: float = 1.0,
            incidents: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None,
            predicates: list[PredicateResult] | None = None, retryable: bool = False, reason: str | None = None,
            partial: bool = False, diagnostic: float | None = None) -> AttemptResult:
    es = EndState(state)
    return AttemptResult(
        run_id="synthetic", trial_id=trial_id(task, variant, agent, rep), task_id=task, category=category,
        variant=variant, agent=agent, repetition=rep, attempt=attempt, end_state=es, reason=reason,
        retryable=retryable, partial=partial, predicates_held=es is EndState.passed,
        diagnostic_score=diagnostic if diagnostic is not None else (100.0 if es is EndState.passed else 0.0),
        predicates=predicates or [], timings=Timings(started_at=1000.0, ended_at=1000.0 + wall),
        usage=UsageTotals(cost_usd=cost, input_tokens=tokens, tool_calls=tool_calls, interventions=interventions),
        incidents=incidents or [], extra=extra or {},
    )


def write_run(path: Path, categories: dict[str, float], results: list[AttemptResult], *, isolated: bool = False,
              planned_extra: list[str] | None = None, run_id: str = "synthetic", **manifest_kw: Any) -> RunDir:
    """A real run directory holding ``results`` (plan = their trials + ``planned_extra``)."""
    trials = list(dict.fromkeys(r.trial_id for r in results)) + list(planned_extra or [])
    agents = sorted({r.agent for r in results})
    rd = RunDir.create(path, manifest(categories, agents, trials, isolated=isolated, run_id=run_id, **manifest_kw))
    for r in results:
        rd.write_result(r)
    return rd
