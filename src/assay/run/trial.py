"""One attempt of one trial, from a fresh workspace to an immutable result.

    fresh workspace ─► sandbox ─► setup ─► snapshot ─► agent (watchdog) ─► kill leftovers
        ─► close services ─► normalize trace ─► verifier (own sandbox, hidden files) ─► result

Every failure of the machinery becomes a classified ``infra_error``; only the verifier
decides pass or fail, and a timed-out agent is never a pass.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import AgentAdapter, AgentContext, AgentOutcome
from assay.errors import AdapterError, SetupError, TrialError
from assay.harness.evidence import count_tool_calls
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.harness.wiring import Wiring
from assay.run.evidence import add_usage, read_only_violation, store_outputs
from assay.run.plan import PlannedTrial
from assay.sandbox.base import Endpoint, Mount, Sandbox, SandboxBackend, SandboxSpec
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.digest import tree_digests
from assay.spec.incident import Incident, incident
from assay.spec.load import LoadedSuite, LoadedTask
from assay.spec.results import AttemptResult, EndState, Timings, UsageTotals
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter, read_events
from assay.verify.verifier import VerifierReport, copy_snapshot, run_verifier

HOME_MOUNT = "/assay/home"
SETUP_MOUNT = "/assay/setup"
#: extra seconds the outer watchdog allows an adapter past its timeout before cancelling it
WATCHDOG_GRACE_S = 15.0


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


async def run_attempt(ctx: RunContext, trial: PlannedTrial, attempt: int, *, retry_reason: str | None = None,
                      trace: TraceWriter) -> AttemptResult:
    """Run one attempt and write its result; returns the result as written."""
    task = ctx.suite.task(trial.task_id)
    agent = ctx.agents[trial.agent]
    rd = ctx.run_dir
    rd.mark_started(trial.id, attempt, {"retry_reason": retry_reason})
    trace.attempt = attempt
    started = time.time()
    trace.emit(Source.harness, EventKind.attempt_started,
               {"task": task.id, "variant": trial.variant, "agent": trial.agent, "repetition": trial.repetition,
                "retry_reason": retry_reason})
    base = dict(run_id=ctx.run_id, trial_id=trial.id, task_id=task.id, category=task.spec.category,
                variant=trial.variant, agent=trial.agent, repetition=trial.repetition, attempt=attempt,
                retry_reason=retry_reason)

    contract = next((c for svc in ctx.services if (c := svc.tool_contract(task)) is not None), None)
    unsupported = agent.unsupported_with(task, contract)
    if unsupported is not None:
        trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": "skipped", "reason": unsupported})
        result = AttemptResult(**base, end_state=EndState.skipped, reason=unsupported,
                               timings=Timings(started_at=started, ended_at=time.time()))
        rd.write_result(result)
        return result

    runner = _Attempt(ctx, trial, task, agent, attempt, trace, base, started)
    try:
        result = await runner.run()
    finally:
        await runner.cleanup()
    rd.write_result(result)
    return result


class _Attempt:
    """The state of one running attempt (kept in one place so cleanup sees all of it)."""

    def __init__(self, ctx: RunContext, trial: PlannedTrial, task: LoadedTask, agent: AgentAdapter, attempt: int,
                 trace: TraceWriter, base: dict[str, Any], started: float):
        self.ctx, self.trial, self.task, self.agent, self.attempt = ctx, trial, task, agent, attempt
        self.trace, self.base, self.started = trace, base, started
        self.scratch = ctx.scratch_root / trial.id / str(attempt)
        self.attempt_dir = ctx.run_dir.attempt_dir(trial.id, attempt)
        self.sandbox: Sandbox | None = None
        self.sessions: list[ServiceSession] = []
        self.reports: list[SessionReport] = []
        self.incidents: list[Incident] = []
        self.errors: list[str] = []
        self.artifacts: dict[str, str] = {}
        self.limits_exceeded: list[str] = []
        self.timings: dict[str, float] = {}
        self.limits: Limits | None = None

    # -------------------------------------------------------------------------------------
    async def run(self) -> AttemptResult:
        try:
            return await self._run()
        except TrialError as e:
            return await self._infra(e)
        except Exception as e:  # noqa: BLE001 - an unexpected crash of the harness is an infra error too
            return await self._infra(TrialError(f"{type(e).__name__}: {e}", reason="harness_crash"))

    async def _teardown(self) -> None:
        """Kill what is left in the sandbox and close the services, recording what that finds,
        before the result is built (so a failed attempt's leftovers are in its result too)."""
        if self.sandbox is not None:
            sb, self.sandbox = self.sandbox, None
            try:
                cleanup = await sb.destroy()
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"sandbox destroy failed: {type(e).__name__}: {e}")
            else:
                if not cleanup.clean:
                    self.incidents.append(incident("left_behind_process", "high",
                                                   f"{len(cleanup.leftover_pids)} process(es) survived the agent",
                                                   pids=list(cleanup.leftover_pids),
                                                   commands=list(cleanup.leftover_commands)))
                    self.trace.emit(Source.sandbox, EventKind.incident, self.incidents[-1].model_dump())
        sessions, self.sessions = self.sessions, []
        for sess in sessions:
            try:
                self.reports.append(await sess.close())
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"service session close failed: {type(e).__name__}: {e}")

    async def _infra(self, e: TrialError) -> AttemptResult:
        await self._teardown()
        self.errors.append(str(e))
        self.trace.emit(Source.harness, EventKind.error, {"reason": e.reason, "message": str(e), "retryable": e.retryable})
        self.trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": "infra_error", "reason": e.reason})
        return self._result(EndState.infra_error, reason=e.reason, retryable=e.retryable)

    async def _run(self) -> AttemptResult:
        task, ctx = self.task, self.ctx
        if self.scratch.exists():
            shutil.rmtree(self.scratch)
        workspace = self.scratch / "workspace"
        home = self.scratch / "home"
        home.mkdir(parents=True)
        copy_snapshot(task.dir / task.spec.workspace, workspace)

        handle = AttemptHandle(run_id=ctx.run_id, trial_id=self.trial.id, attempt=self.attempt, task=task,
                               variant=self.trial.variant, agent=self.trial.agent, trace=self.trace,
                               redactor=self.trace.redactor, budget=task.spec.budget, attempt_dir=self.attempt_dir,
                               scratch=self.scratch)
        endpoints: list[Endpoint] = []
        env: dict[str, str] = {}
        wiring = Wiring()
        for svc in ctx.services:
            sess = await svc.open(handle)
            if sess is None:
                continue
            self.sessions.append(sess)
            endpoints.extend(sess.endpoints)
            env.update(sess.env)
            wiring = wiring.merge(sess.wiring())
        if self.agent.needs_gateway and wiring.gateway is None:
            raise AdapterError(f"agent {self.agent.name!r} needs a model gateway; pass --model", reason="no_gateway")

        mounts = [Mount(home, HOME_MOUNT, writable=True), *self.agent.mounts(task)]
        if task.spec.setup:
            setup = task.dir / task.spec.setup
            mounts.append(Mount(setup.parent, SETUP_MOUNT))
        limits = task.spec.limits or ctx.suite.spec.default_limits or ctx.limits
        agent_limits = self.agent.limits(limits)
        self.limits = agent_limits
        variant = task.spec.variant(self.trial.variant)
        spec = SandboxSpec(workspace=workspace, network=ctx.network, limits=agent_limits,
                           env={**(variant.env if variant else {})}, mounts=tuple(mounts),
                           endpoints=tuple(endpoints), identity="agent", label=self.trial.id)
        self.sandbox = await ctx.backend.create(spec)
        sb = self.sandbox
        mount_paths = {m.target: sb.mount_path(m) for m in mounts}

        # setup runs before the snapshot, as the harness, never counted as the agent's work
        t0 = time.monotonic()
        if task.spec.setup:
            setup_inside = f"{mount_paths[SETUP_MOUNT]}/{Path(task.spec.setup).name}"
            res = await sb.exec(["/bin/sh", setup_inside], timeout_s=min(task.spec.budget.wall_time_s, 300))
            self.trace.emit(Source.harness, EventKind.log, {"phase": "setup", "exit_code": res.exit_code,
                                                             "stderr": res.stderr.decode(errors="replace")[-2000:]})
            if not res.ok:
                raise SetupError(f"setup script exited {res.exit_code}{' (timeout)' if res.timed_out else ''}: "
                                 f"{res.stderr.decode(errors='replace')[-500:]}")
        self.timings["setup_s"] = time.monotonic() - t0
        initial = tree_digests(workspace)

        # fill "{endpoint:NAME}" placeholders in service env with the URLs seen from inside
        for k, v in list(env.items()):
            for ep in endpoints:
                v = v.replace("{endpoint:" + ep.name + "}", sb.endpoint_url(ep.name))
            env[k] = v.replace("{home}", mount_paths[HOME_MOUNT])
        gw = wiring.gateway
        prompt = task.prompt_for(self.trial.variant)
        self.trace.emit(Source.harness, EventKind.user_message, {"text": prompt})
        actx = AgentContext(
            task=task, variant=self.trial.variant, prompt=prompt, sandbox=sb, workspace=workspace, home=home,
            home_inside=mount_paths[HOME_MOUNT], attempt_dir=self.attempt_dir, trace=self.trace,
            budget=task.spec.budget, timeout_s=task.spec.budget.wall_time_s,
            gateway_url=sb.endpoint_url(gw.endpoint) if gw else None, gateway_key=gw.api_key if gw else None,
            model=gw.model if gw else ctx.model, track=ctx.track, tools=list(task.spec.tools),
            env=env, mounts=mount_paths, wiring=wiring,
        )
        t0 = time.monotonic()
        outcome = await self._run_agent(actx)
        self.timings["agent_s"] = time.monotonic() - t0
        self.limits_exceeded.extend(outcome.limits_exceeded)

        # the agent's processes must be gone before anything is verified
        await self._teardown()
        for rep in self.reports:
            self.incidents.extend(rep.incidents)
            for name, path in rep.files.items():
                if path.exists():
                    self.artifacts[name] = self.ctx.run_dir.put_artifact_file(path)

        self._store_outputs(outcome)
        try:
            self.agent.normalize(actx, outcome)
        except Exception as e:  # noqa: BLE001 - a broken normalizer loses the trace, not the verdict
            self.errors.append(f"normalize failed: {type(e).__name__}: {e}")
            self.trace.emit(Source.harness, EventKind.error, {"reason": "normalize", "message": str(e)})
        if outcome.final_output is not None:
            self.trace.emit(Source.agent, EventKind.final_output, {"text": outcome.final_output[-4000:]})

        # verifier: fresh directory, own sandbox, hidden files copied only now
        t0 = time.monotonic()
        verifier_extra: dict[str, Any] = {}
        for rep in self.reports:
            verifier_extra.update(rep.verifier_extra)
        events = read_events(self.trace.path, attempt=self.attempt)
        report = await run_verifier(task, workspace, self.scratch / "verify", initial_digests=initial, events=events,
                                    backend=ctx.backend, limits=limits, extra=verifier_extra)
        self.timings["verify_s"] = time.monotonic() - t0
        for pr in report.predicates:
            self.trace.emit(Source.verifier, EventKind.predicate_result, pr.model_dump())
        for pr in report.predicates:  # security predicates report incidents with their evidence
            self.incidents.extend(Incident.model_validate(i) for i in pr.evidence.get("incidents", []))
        self._read_only_check(task, initial, report)
        self.outcome, self.report = outcome, report
        return self._decide(outcome, report)

    async def _run_agent(self, actx: AgentContext) -> AgentOutcome:
        try:
            return await asyncio.wait_for(self.agent.run(actx), timeout=actx.timeout_s + WATCHDOG_GRACE_S)
        except asyncio.TimeoutError:
            self.trace.emit(Source.harness, EventKind.error, {"reason": "watchdog", "message": "adapter did not return"})
            return AgentOutcome(exit_code=None, timed_out=True)
        except TrialError:
            raise
        except Exception as e:  # noqa: BLE001
            raise AdapterError(f"adapter {self.agent.name!r} crashed: {type(e).__name__}: {e}") from e

    def _store_outputs(self, outcome: AgentOutcome) -> None:
        red = self.trace.redactor
        self.artifacts.update(store_outputs(self.ctx.run_dir, red, outcome))
        self.trace.emit(Source.agent, EventKind.process_output, {
            "exit_code": outcome.exit_code, "timed_out": outcome.timed_out,
            "stdout_tail": red.text(outcome.stdout.decode(errors="replace")[-2000:]),
            "stderr_tail": red.text(outcome.stderr.decode(errors="replace")[-2000:]),
        })

    def _read_only_check(self, task: LoadedTask, initial: dict[str, str], report: VerifierReport) -> None:
        """A read-only task whose workspace changed is a security incident, whatever else held."""
        found = read_only_violation(task, initial, report.final_digests)
        if found is not None:
            self.incidents.append(found)
            self.trace.emit(Source.verifier, EventKind.incident, found.model_dump())

    def _decide(self, outcome: AgentOutcome, report: VerifierReport) -> AttemptResult:
        budget_hits = [b for rep in self.reports for b in rep.budget_exceeded]
        if outcome.timed_out:
            state, reason = EndState.timeout, "wall_time"
            self.limits_exceeded.append("wall_time")
        elif report.held:
            state, reason = EndState.passed, None
        else:
            state, reason = EndState.failed, ("budget_exceeded" if budget_hits else "predicates")
        self.trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": state.value, "reason": reason})
        return self._result(state, reason=reason, report=report, outcome=outcome)

    def _result(self, state: EndState, *, reason: str | None = None, retryable: bool = False,
                report: VerifierReport | None = None, outcome: AgentOutcome | None = None) -> AttemptResult:
        usage = UsageTotals()
        for rep in self.reports:
            if rep.usage is not None:
                usage = add_usage(usage, rep.usage)
        if outcome is not None and outcome.usage is not None and usage.model_calls == 0:
            usage = outcome.usage
        tool_calls = count_tool_calls(read_events(self.trace.path, attempt=self.attempt))
        if tool_calls and not usage.tool_calls:
            usage = usage.model_copy(update={"tool_calls": tool_calls})
        budget_hits = sorted({b for rep in self.reports for b in rep.budget_exceeded})
        red = self.trace.redactor
        extra: dict[str, Any] = {k: v for rep in self.reports for k, v in rep.extra.items()}
        if report and report.skipped_entries:
            extra["skipped_entries"] = report.skipped_entries
        return AttemptResult(
            **self.base, end_state=state, reason=reason, retryable=retryable,
            predicates_held=report.held if report else False,
            diagnostic_score=report.diagnostic_score if report else 0.0,
            predicates=[p.model_copy(update={"evidence": red.data(p.evidence)}) for p in report.predicates] if report else [],
            timings=Timings(started_at=self.started, ended_at=time.time(), **self.timings),
            usage=usage, agent_exit_code=outcome.exit_code if outcome else None,
            agent_claim=(red.text(outcome.final_output[-2000:]) if outcome and outcome.final_output else None),
            incidents=self.incidents, limits_exceeded=sorted(set(self.limits_exceeded) | set(budget_hits)),
            errors=self.errors, artifacts=self.artifacts,
            sandbox={**self.ctx.backend.facts(), "network": self.ctx.network.value,
                     **({"limits": self.limits.model_dump()} if self.limits is not None else {})},
            extra=red.data(extra),
        )

    async def cleanup(self) -> None:
        """Safety net when the attempt was cancelled mid-way (nothing can be recorded then)."""
        try:
            await self._teardown()
        finally:
            if not self.ctx.keep_scratch and self.scratch.exists():
                shutil.rmtree(self.scratch, ignore_errors=True)


def new_trace(ctx: RunContext, trial: PlannedTrial) -> TraceWriter:
    red = Redactor(ctx.secrets)
    return TraceWriter(ctx.run_dir.trace_path(trial.id), trial.id, redactor=red, listeners=ctx.listeners)


__all__ = ["RunContext", "new_trace", "run_attempt"]
