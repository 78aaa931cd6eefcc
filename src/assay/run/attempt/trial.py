"""One attempt of one trial, from a fresh workspace to an immutable result.

    prepare (workspace, services) ─► setup (sandbox, setup script, snapshot) ─► agent (watchdog)
        ─► teardown (kill leftovers, close services, collect evidence) ─► verify (own sandbox)
        ─► seal (end state from the records, events written once, result)

Each phase returns a frozen record (:mod:`.records`); the end state is a pure function of them
(:mod:`.endstate`). Every failure of the machinery becomes a classified ``infra_error``; only
the verifier decides pass or fail, and a timed-out agent is never a pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import AgentAdapter
from assay.gateway.errors import backend_failed
from assay.harness.budget import BudgetMeter
from assay.harness.services import AttemptHandle, HarnessService
from assay.records.results import AttemptResult, UsageTotals
from assay.run import hostload
from assay.run.attempt import phases
from assay.run.attempt.endstate import budget_that_ended, decide
from assay.run.attempt.records import AttemptRecords
from assay.run.attempt.seal import SealEnv, seal
from assay.run.plan import PlannedTrial
from assay.run.workspace import release_workspace
from assay.sandbox.off_loop import off_loop
from assay.run_budget.meter import RunBudgetMeter
from assay.sandbox.base import SandboxBackend
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.load import LoadedSuite
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter
from assay.verify.remote import RemoteVerify
from assay.untrusted.tree import remove_untrusted

HOME_MOUNT = phases.HOME_MOUNT
WATCHDOG_GRACE_S = phases.WATCHDOG_GRACE_S


@dataclass
class RunContext:
    """What every attempt of a run shares."""

    run_id: str
    run_dir: RunDir
    suite: LoadedSuite
    agents: dict[str, AgentAdapter]
    backend: SandboxBackend
    scratch_root: Path
    network: NetworkProfile = NetworkProfile.harness
    limits: Limits = field(default_factory=Limits)
    services: list[HarnessService] = field(default_factory=list)
    model: str | None = None
    track: str = "controlled"
    secrets: dict[str, str] = field(default_factory=dict)
    listeners: list[Any] = field(default_factory=list)
    keep_scratch: bool = False
    run_budget: RunBudgetMeter | None = None  # the run-wide budget, shared by every attempt
    judge_spend: UsageTotals | None = None  # what a judge run elsewhere (a cluster's hub) spent
    remote_verify: RemoteVerify | None = None  # verification on verifier nodes (a cluster that has them)


async def run_attempt(ctx: RunContext, trial: PlannedTrial, attempt: int, *, retry_reason: str | None = None,
                      trace: TraceWriter) -> AttemptResult:
    """Run one attempt whose started marker is on disk; returns its sealed result, for the
    executor to announce (the run directory's recorder writes it, with the attempt's events)."""
    task = ctx.suite.task(trial.task_id)
    agent = ctx.agents[trial.agent]
    rd = ctx.run_dir
    trace.attempt = attempt
    started = time.time()
    host_start = hostload.sample()
    trace.emit(Source.harness, EventKind.attempt_started,
               {"task": task.id, "variant": trial.variant, "agent": trial.agent, "repetition": trial.repetition,
                "retry_reason": retry_reason})
    base = dict(run_id=ctx.run_id, trial_id=trial.id, task_id=task.id, category=task.spec.category,
                variant=trial.variant, agent=trial.agent, repetition=trial.repetition, attempt=attempt,
                retry_reason=retry_reason)
    contract = next((c for svc in ctx.services if (c := svc.tool_contract(task)) is not None), None)
    unsupported = agent.unsupported_with(task, contract)
    if unsupported is not None:
        records = AttemptRecords(skipped=unsupported)
        return seal(SealEnv(base, started, {}, host_start), records, decide(records), trace)

    scratch = ctx.scratch_root / trial.id / str(attempt)
    handle = AttemptHandle(run_id=ctx.run_id, trial_id=trial.id, attempt=attempt, task=task, variant=trial.variant,
                           agent=trial.agent, trace=trace, redactor=trace.redactor, budget=task.spec.budget,
                           attempt_dir=rd.attempt_dir(trial.id, attempt), scratch=scratch,
                           meter=BudgetMeter(task.spec.budget, ctx.run_budget), world_tools=contract)
    env = phases.AttemptEnv(task=task, agent=agent, variant=trial.variant, handle=handle, backend=ctx.backend,
                            suite=ctx.suite, network=ctx.network, run_limits=ctx.limits, track=ctx.track,
                            model=ctx.model, run_dir=rd, remote_verify=ctx.remote_verify)
    live = phases.Live(workspace=scratch / "workspace", home=scratch / "home")
    try:
        records = await _phases(ctx, env, live)
    finally:
        await _release(ctx, env, live)
    facts = {**ctx.backend.facts(), "network": ctx.network.value}
    if records.verify is not None and records.verify.node_id is not None:
        facts["verifier_node_id"] = records.verify.node_id
    return seal(SealEnv(base, started, facts, host_start), records, decide(records), trace)


async def _phases(ctx: RunContext, env: phases.AttemptEnv, live: phases.Live) -> AttemptRecords:
    """Each phase runs only when every earlier one held; teardown always runs."""
    prepared = await phases.prepare(env, live, ctx.services)
    set_up = await phases.setup(env, live) if prepared.error is None else None
    ran = await phases.run_agent(env, live) if set_up is not None and set_up.error is None else None
    torn = await phases.teardown(env, live, ran)
    verified = None
    if ran is not None and ran.error is None and set_up is not None:
        verified = await phases.verify(env, live, set_up, torn)
    outcome = ran.outcome if ran is not None else None
    return AttemptRecords(prepare=prepared, setup=set_up, agent=ran, teardown=torn, verify=verified,
                          budget=budget_that_ended(env.handle.budget_meter.ended_by, outcome),
                          model_backend=model_backend_failure(env.handle.trace))


def model_backend_failure(trace: TraceWriter) -> str | None:
    """The first failure of the model backend this attempt's gateway recorded (its ``error``
    event's reason), if any: read from the trace, where the gateway alone writes ``gateway`` events."""
    for e in trace.events():
        if e.source is Source.gateway and e.kind is EventKind.error:
            status = e.data.get("status")
            if backend_failed(str(e.data.get("reason")), status if isinstance(status, int) else None):
                return str(e.data.get("reason"))
    return None


async def _release(ctx: RunContext, env: phases.AttemptEnv, live: phases.Live) -> None:
    """Safety net when the attempt was cancelled mid-way (nothing can be recorded then)."""
    try:
        if live.sandbox is not None or live.sessions:
            await phases.teardown(env, live, None)
    finally:  # off the loop (an unmount waits on the kernel): the other attempts go on meanwhile
        await off_loop(_clear, live.workspace, None if ctx.keep_scratch else env.handle.scratch)


def _clear(workspace: Path, scratch: Path | None) -> None:
    """The overlay unmounted (kept or not, the scratch is then plain folders), the scratch removed."""
    release_workspace(workspace)
    if scratch is not None and scratch.exists():
        remove_untrusted(scratch)


def new_trace(ctx: RunContext, trial: PlannedTrial) -> TraceWriter:
    """The trial's trace: events held in memory for each attempt, written once by the recorder."""
    red = Redactor(ctx.secrets)
    return TraceWriter(ctx.run_dir.trace_path(trial.id), trial.id, redactor=red, listeners=ctx.listeners,
                       buffered=True)


__all__ = ["RunContext", "new_trace", "run_attempt"]
