"""The phases of one attempt: prepare, setup, agent, teardown, verify (seal is :mod:`.seal`).

Each phase is a function that returns a frozen record (:mod:`.records`) of its timing, its
error and its evidence, and never raises: a failure becomes the record's ``error``. The live
resources (the sandbox, the services' sessions) are kept in one :class:`Live` so teardown
releases them whatever happened before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
from typing import Any, Awaitable, Sequence

from assay.agents.base import AgentContext, AgentOutcome, Normalized
from assay.agents.builtin import SOLUTION_MOUNT
from assay.conversations import state as turn_state
from assay.conversations.loop import ConversationLog, run_conversation
from assay.conversations.simulator import SimulatorSession
from assay.conversations.verify import verify_turns
from assay.environments import runtime as env_runtime
from assay.errors import AdapterError, SetupError, TrialError
from assay.harness.services import SessionReport
from assay.records.incident import Incident, incident
from assay.records.results import EVENTS_NOT_KEPT, EVIDENCE_NOT_KEPT
from assay.records.verifier_inputs import VerifierInputs
from assay.run.attempt.elsewhere import verify_elsewhere
from assay.run.attempt.evidence import read_only_violation, store_final_state, store_outputs
from assay.run.attempt.live import (AGENT_FILES, HOME_MOUNT, SETUP_MOUNT, WATCHDOG_GRACE_S, AttemptEnv, Live,
                                    timed)
from assay.run.attempt.process_faults import run_with_process_faults
from assay.run.attempt.records import AgentRan, Prepared, SetUp, TornDown, Verified
from assay.run.task_staging import stage_mounts, stage_setup
from assay.run.workspace import final_state, initial_state, make_workspace, release_workspace
from assay.sandbox.base import Mount, SandboxSpec
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.digest import workspace_hash_budget
from assay.spec.load import LoadedTask
from assay.spec.task_env import interpreter
from assay.store.rundir import is_disk_full
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter
from assay.untrusted.files import TRAPS
from assay.untrusted.numeral import amount
from assay.untrusted.tree import remove_untrusted
from assay.verify.verifier import run_verifier
from assay.worlds.call_record import call_record, mismatch_incidents

# ------------------------------------------------------------------------------ prepare
async def prepare(env: AttemptEnv, live: Live, services: list[Any]) -> Prepared:
    async def body() -> dict[str, Any]:
        scratch = env.handle.scratch
        if scratch.exists():
            release_workspace(live.workspace)
            remove_untrusted(scratch)
        live.home.mkdir(parents=True)
        make_workspace(env.task.dir / env.task.spec.workspace, live.workspace, env.task.spec.empty_dirs)
        live.seeded = env_runtime.seed_workspace(env_runtime.image_root(env.task), live.workspace) > 0
        for svc in services:
            sess = await svc.open(env.handle)
            if sess is None:
                continue
            live.sessions.append(sess)
            live.endpoints.extend(sess.endpoints)
            live.env.update(sess.env)
            live.wiring = live.wiring.merge(sess.wiring())
        if env.agent.needs_gateway and live.wiring.gateway is None:
            raise AdapterError(f"agent {env.agent.name!r} needs a model gateway; pass --model", reason="no_gateway")
        if env.agent.needs_gateway and network(env) == NetworkProfile.none:
            raise AdapterError(f"agent {env.agent.name!r} needs the model gateway, and task {env.task.id!r} declares "
                               "network: none (no harness endpoint is reachable)", reason="no_gateway")
        return {"sessions": len(live.sessions)}

    return await timed("prepare", body, Prepared)


# ------------------------------------------------------------------------------ setup
#: where the attempt's private copies of task files live in its scratch (never mounted as a whole)
STAGED = "staged"


async def setup(env: AttemptEnv, live: Live) -> SetUp:
    task = env.task

    async def body() -> dict[str, Any]:
        plain = env.agent.limits(task_limits(env), task)
        limits, cpu_budget = cpu_budgeted(plain, env.handle.budget.cpu_time_s)
        variant = task.spec.variant(env.variant)
        variant_env = {**task.spec.env.agent, **(variant.env if variant else {})}
        if task.spec.setup:  # before the snapshot, as the harness: never counted as the agent's work
            await run_setup(env, live, plain, variant_env)  # the agent's CPU-time budget is not the setup's
        staged = env.handle.scratch / STAGED
        mounts = [Mount(live.home, HOME_MOUNT, writable=True), *stage_mounts(env.agent.mounts(task), task, staged, SOLUTION_MOUNT)]
        spec = SandboxSpec(workspace=live.workspace, network=network(env), limits=limits, env=variant_env,
                           workdir=task.spec.workdir, mounts=tuple(mounts), endpoints=tuple(live.endpoints),
                           identity="agent", label=env.handle.trial_id, image=env_runtime.image_root(task))
        live.sandbox_spec = spec
        live.sandbox = sb = await env.backend.create(spec)
        live.mounts = {m.target: sb.mount_path(m) for m in mounts}
        initial = initial_state(task.dir / task.spec.workspace, live.workspace, task.digest,
                                setup_ran=written_before_agent(task, live),
                                budget=workspace_hash_budget(task_limits(env).disk_mb))
        live.initial_scan = initial.scan
        return {"initial": initial.digests, "limits": limits, "cpu_budget": cpu_budget}

    return await timed("setup", body, SetUp)


async def run_setup(env: AttemptEnv, live: Live, limits: Limits, variant_env: dict[str, str]) -> None:
    """The task's setup script in a sandbox of its own over the workspace and home, destroyed
    before the agent's sandbox exists: the script and its declared files (private copies) are
    never reachable by the agent, and nothing it left running outlives it."""
    task = env.task
    assert task.spec.setup is not None
    stage = stage_setup(task, env.handle.scratch / STAGED / "setup")
    mounts = (Mount(live.home, HOME_MOUNT, writable=True), Mount(stage, SETUP_MOUNT))
    sb = await env.backend.create(SandboxSpec(workspace=live.workspace, network=network(env), limits=limits,
                                              env=variant_env, workdir=task.spec.workdir, mounts=mounts, endpoints=tuple(live.endpoints),
                                              identity="agent", label=f"{env.handle.trial_id}:setup",
                                              image=env_runtime.image_root(task)))
    try:
        script = f"{sb.mount_path(mounts[1])}/{task.spec.setup}"
        argv = [*interpreter(task.dir / task.spec.setup), script]  # by its #! line, else /bin/sh
        res = await sb.exec(argv, timeout_s=min(task.spec.budget.wall_time_s, 300))
    finally:
        left = await sb.destroy()
        remove_untrusted(stage)
    env.trace.emit(Source.harness, EventKind.log, {"phase": "setup", "exit_code": res.exit_code,
                                                    "stderr": res.stderr.decode(errors="replace")[-2000:]})
    if not left.clean:  # the task's own doing, not the agent's: recorded, never a security incident
        inc = incident("setup_left_running", "low", f"{len(left.leftover_pids)} process(es) the setup script left "
                       "were killed with its sandbox", pids=list(left.leftover_pids),
                       commands=list(left.leftover_commands))
        live.setup_incidents.append(inc)
        env.trace.emit(Source.harness, EventKind.incident, inc.model_dump())
    if not res.ok:
        raise SetupError(f"setup script exited {res.exit_code}{' (timeout)' if res.timed_out else ''}: "
                         f"{res.stderr.decode(errors='replace')[-500:]}")


def cpu_budgeted(limits: Limits, cpu_time_s: float | None) -> tuple[Limits, bool]:
    """The sandbox limits with the CPU-time budget as their CPU bound when it is the tighter one
    (whole seconds, rounded up); True when the budget is what bounds the agent's CPU."""
    if cpu_time_s is None:
        return limits, False
    bound = math.ceil(cpu_time_s)
    if limits.cpu_time_s is not None and limits.cpu_time_s < bound:
        return limits, False
    return limits.model_copy(update={"cpu_time_s": bound}), True


def written_before_agent(task: LoadedTask, live: Live) -> bool:
    """Whether anything but the fixture's copy wrote the workspace before the agent (a setup
    script, the image's WORKDIR files, a service's planted canary file): then its initial state is
    walked, not taken from the task's cached walk of the fixture."""
    return bool(task.spec.setup) or live.seeded or any(c.file for c in task.spec.canaries)


def turn_copy_budget(limits: Limits) -> int | None:
    """Host bytes one conversation's per-turn workspace copies may take: twice the disk bound."""
    return 2 * (limits.disk_mb << 20) if limits.disk_mb else None


def network(env: AttemptEnv) -> NetworkProfile:
    """The run's network narrowed by the task's ``network:`` (never widened)."""
    return env.network.narrowed(env.task.spec.network)


def task_limits(env: AttemptEnv) -> Limits:
    """The task's limits, else the suite's, else the run's."""
    return env.task.spec.limits or env.suite.spec.default_limits or env.run_limits


# ------------------------------------------------------------------------------ agent
async def run_agent(env: AttemptEnv, live: Live) -> AgentRan:
    async def body() -> dict[str, Any]:
        actx = live.context = agent_context(env, live)

        def again() -> AgentContext:  # after a process fault: the same attempt, maybe a new sandbox
            live.context = agent_context(env, live, announce=False)  # the restart records what it is given
            return live.context

        def watchdog(e: AttemptEnv, a: AgentContext) -> Awaitable[AgentOutcome]:
            return _watchdog(e, a, live)  # a conversation task runs its turns under the same watchdog

        return {"outcome": await run_with_process_faults(env, live, actx, watchdog, again)}

    return await timed("agent", body, AgentRan)


def agent_context(env: AttemptEnv, live: Live, announce: bool = True) -> AgentContext:
    """What the adapter is handed: ``{endpoint:NAME}`` and ``{home}`` filled as seen from inside
    (``announce``: the prompt recorded as the user's message)."""
    sb, task = live.sandbox, env.task
    assert sb is not None
    agent_env = {}
    reach = sb.spec.network != NetworkProfile.none  # a task's network: none reaches no endpoint
    for k, v in live.env.items():
        if not reach and "{endpoint:" in v:
            continue
        for ep in live.endpoints:
            v = v.replace("{endpoint:" + ep.name + "}", sb.endpoint_url(ep.name))
        agent_env[k] = v.replace("{home}", live.mounts[HOME_MOUNT])
    prompt = task.prompt_for(env.variant)
    if announce and task.spec.conversation is None:  # a conversation records each turn's user message itself
        env.trace.emit(Source.harness, EventKind.user_message, {"text": prompt})
    gw = live.wiring.gateway
    h = env.handle
    return AgentContext(
        task=task, variant=env.variant, prompt=prompt, sandbox=sb, workspace=live.workspace, home=live.home,
        home_inside=live.mounts[HOME_MOUNT], attempt_dir=h.scratch / AGENT_FILES, trace=h.trace, budget=task.spec.budget,
        timeout_s=task.spec.budget.wall_time_s, gateway_url=sb.endpoint_url(gw.endpoint) if gw and reach else None,
        gateway_key=gw.api_key if gw else None, model=gw.model if gw else env.model, track=env.track,
        tools=list(task.spec.tools), env=agent_env, mounts=dict(live.mounts), wiring=live.wiring)


def _conversation(env: AttemptEnv, live: Live, actx: AgentContext) -> Awaitable[AgentOutcome]:
    """The agent's turns of a conversation task, the state kept after each (:mod:`assay.conversations`)."""
    conv = env.task.spec.conversation
    assert conv is not None
    live.conversation = log = ConversationLog()
    meter = env.handle.budget_meter
    simulator = next((s for s in live.sessions if isinstance(s, SimulatorSession)), None)
    return run_conversation(env.agent, actx, conv,
                            lambda n: turn_state.take(n, live.workspace, env.handle.scratch, live.sessions,
                                                      budget_bytes=turn_copy_budget(task_limits(env))), log,
                            simulator=simulator, spent=lambda: meter.ended_by)


async def _watchdog(env: AttemptEnv, actx: AgentContext, live: Live | None = None) -> AgentOutcome:
    work = env.agent.run(actx) if live is None or env.task.spec.conversation is None else _conversation(env, live, actx)
    try:
        return await asyncio.wait_for(work, timeout=actx.timeout_s + WATCHDOG_GRACE_S)
    except asyncio.TimeoutError:
        env.trace.emit(Source.harness, EventKind.error, {"reason": "watchdog", "message": "adapter did not return"})
        return AgentOutcome(exit_code=None, timed_out=True)
    except TrialError:
        raise
    except Exception as e:  # noqa: BLE001
        raise AdapterError(f"adapter {env.agent.name!r} crashed: {type(e).__name__}: {e}") from e


# ------------------------------------------------------------------------------ teardown
async def teardown(env: AttemptEnv, live: Live, ran: AgentRan | None) -> TornDown:
    """Kill what is left in the sandbox and close the sessions (the agent's processes are gone
    before anything is verified), then keep the evidence: the services' files, the agent's
    outputs and its session as trace events. What this finds is evidence, never an end state."""
    t0 = time.monotonic()
    incidents: list[Incident] = []
    errors: list[str] = []
    reports: list[SessionReport] = []
    cpu_s: float | None = None
    bound: str | None = None
    if live.sandbox is not None:
        sb, live.sandbox = live.sandbox, None
        try:
            cleanup = await sb.destroy()
        except Exception as e:  # noqa: BLE001
            errors.append(f"sandbox destroy failed: {type(e).__name__}: {e}")
        else:
            live.frozen = env.backend.isolated
            cpu_s, bound = cleanup.cpu_s, cleanup.resource_limit
            if not cleanup.clean:
                inc = incident("left_behind_process", "high", f"{len(cleanup.leftover_pids)} process(es) survived "
                               "the agent", pids=list(cleanup.leftover_pids), commands=list(cleanup.leftover_commands),
                               nested_pids=list(cleanup.leftover_nested))
                incidents.append(inc)
                env.trace.emit(Source.sandbox, EventKind.incident, inc.model_dump())
    incidents.extend(live.setup_incidents)
    sessions, live.sessions = live.sessions, []
    for sess in sessions:
        try:
            reports.append(await sess.close())
        except Exception as e:  # noqa: BLE001
            errors.append(f"service session close failed: {type(e).__name__}: {e}")
    artifacts: dict[str, str] = {}
    try:
        for rep in reports:
            for name, path in rep.files.items():
                if path.exists():
                    artifacts[name] = env.run_dir.put_artifact_file(path)
        outcome = ran.outcome if ran is not None else None
        for trap in outcome.extra.get(TRAPS, []) if outcome is not None else []:  # planted where the adapter reads
            evidence = {("entry" if k == "kind" else k): v for k, v in trap.items()}  # `kind` names the incident
            incidents.append(incident("agent_home_trap", "high", f"{trap['kind']} at {trap['path']} in the agent home",
                                      **evidence))
        if outcome is not None and live.context is not None:
            try:  # what the agent's session gave never costs the workspace's final state (the screen's diff)
                errors.extend(record_agent(env, live.context, outcome, artifacts))
            except Exception as e:  # noqa: BLE001 - recorded; a full disk still stops the run below
                if is_disk_full(e):
                    raise
                errors.append(f"{EVENTS_NOT_KEPT}{type(e).__name__}: {e}")
        if outcome is not None and live.initial_scan is not None:
            live.final = final_state(live.workspace, live.initial_scan, workspace_hash_budget(task_limits(env).disk_mb))
            artifacts.update(store_final_state(env.run_dir, env.trace.redactor, env.task, live.workspace,
                                               live.initial_scan, outcome, disk_mb=task_limits(env).disk_mb,
                                               now=live.final.scan, changed=live.final.changed))
    except Exception as e:  # noqa: BLE001 - losing evidence is recorded, the verdict still comes
        if is_disk_full(e):
            raise  # the run stops (resumable): a full disk is no attempt's outcome
        errors.append(f"{EVIDENCE_NOT_KEPT}{type(e).__name__}: {e}")
    return TornDown(name="teardown", seconds=time.monotonic() - t0, reports=tuple(reports),
                    incidents=tuple(incidents), errors=tuple(errors), artifacts=artifacts, cpu_s=cpu_s,
                    resource_limit=bound)


def record_agent(env: AttemptEnv, actx: AgentContext, outcome: AgentOutcome, artifacts: dict[str, str]) -> list[str]:
    """The agent's outputs stored, its process and session recorded as trace events; returns errors."""
    red, trace = env.trace.redactor, env.trace
    artifacts.update(store_outputs(env.run_dir, red, outcome))
    trace.emit(Source.agent, EventKind.process_output, {
        "exit_code": outcome.exit_code, "timed_out": outcome.timed_out,
        "stdout_tail": red.text(outcome.stdout.decode(errors="replace")[-2000:]),
        "stderr_tail": red.text(outcome.stderr.decode(errors="replace")[-2000:]),
    })
    errors = [f"normalize failed: {m}" for m in outcome.errors]
    if outcome.events is not None:  # parsed once, by the adapter, when it ran
        emit_agent_events(trace, outcome.events)
    else:
        try:
            env.agent.normalize(actx, outcome)
        except Exception as e:  # noqa: BLE001 - a broken normalizer loses the trace, not the verdict
            errors.append(f"normalize failed: {type(e).__name__}: {e}")
    for m in errors:
        trace.emit(Source.harness, EventKind.error, {"reason": "normalize", "message": m})
    if outcome.final_output is not None:
        trace.emit(Source.agent, EventKind.final_output, {"text": outcome.final_output[-4000:]})
    return errors


def emit_agent_events(trace: TraceWriter, events: Sequence[Normalized]) -> None:
    """The events an adapter read from the agent's session, recorded in order, each at the time the
    session gives it when that is a time (a finite number of seconds), else at the engine's: the
    session is the agent's file, and a time that is text failed the event's validation here (the
    teardown kept none of the evidence after it), an infinite one was written as null (a trace
    line no reader takes)."""
    for ev in events:
        trace.emit(Source.agent, ev.kind, ev.data, ts=amount(ev.ts))


# ------------------------------------------------------------------------------ verify
async def verify(env: AttemptEnv, live: Live, set_up: SetUp, torn: TornDown) -> Verified:
    """The verifier in a fresh directory and its own sandbox, hidden files copied only now."""
    async def body() -> dict[str, Any]:
        extra = VerifierInputs()
        for rep in torn.reports:
            extra = extra.merge(rep.verifier_extra)
        in_place = live.final if live.frozen else None  # read where it is: no copy, no second walk
        node_id = None
        if env.remote_verify is not None and live.conversation is None:
            report, node_id = await verify_elsewhere(env, live, set_up, extra, task_limits(env))
        else:
            report = await run_verifier(env.task, live.workspace, env.handle.scratch / "verify",
                                        initial_digests=set_up.initial, events=env.trace.events(),
                                        backend=env.backend, limits=task_limits(env), extra=extra,
                                        final_digests=in_place.digests if in_place is not None else None)
        if live.conversation is not None:  # each turn's predicates over the state kept after it
            turns = await verify_turns(env.task, live.conversation, env.handle.scratch / "verify-turns",
                                       initial_digests=set_up.initial, events=env.trace.events(),
                                       backend=env.backend, limits=task_limits(env), extra=extra)
            report = dataclasses.replace(report, predicates=[*report.predicates, *turns])
        for pr in report.predicates:
            env.trace.emit(Source.verifier, EventKind.predicate_result, pr.model_dump())
        found = [Incident.model_validate(i) for pr in report.predicates for i in pr.evidence.get("incidents", [])]
        for inc in mismatch_incidents(call_record(env.trace.events())):  # the agent's log against the harness's
            found.append(inc)
            env.trace.emit(Source.verifier, EventKind.incident, inc.model_dump())
        ro = read_only_violation(env.task, set_up.initial, report.final_digests)
        if ro is not None:  # a read-only task whose workspace changed: an incident whatever else held
            found.append(ro)
            env.trace.emit(Source.verifier, EventKind.incident, ro.model_dump())
        return {"report": report, "incidents": tuple(found), "node_id": node_id}

    return await timed("verify", body, Verified)
