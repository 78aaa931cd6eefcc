"""Starting and resuming runs: the library entry points the CLI calls.

``start_run`` checks everything that can be checked before a single trial (suite loads, agents
exist and start, sandbox backend works, gateway settings parse), writes the manifest, then
executes. ``resume_run`` rebuilds the same context from the manifest alone and finishes the plan.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable

from assay._optional import optional_import
from assay.agents.base import AgentAdapter
from assay.environments import runtime as env_runtime
from assay.errors import RunDirError, SpecError, SpecProblem, UsageError
from assay.harness.listen import check_listen
from assay.records.manifest import GatewayRecord, PlanRecord, RunManifest, SandboxRecord
from assay.records.results import AttemptResult
from assay.run import hostload
from assay.run.attempt.trial import RunContext
from assay.run.budget_stop import budget_record, change_limits, judge_totals, open_meter
from assay.run.closing import within_deadline
from assay.run.control import RunControl
from assay.run.controls_run import controls_added, mark_controls
from assay.run.executor import RetryPolicy, execute, pending_trials
from assay.run.extras import check_extras
from assay.run.hooks import Dispatcher, HookFailure, make_plugin_manager
from assay.run.manifest_builder import build_manifest, where_facts
from assay.run.parts import SERVICE_MODULES, agent_refs, build_services, resolve_agents  # noqa: F401 - re-exported
from assay.run.plan import PlannedTrial, build_plan, parse_trial_id
from assay.run.recorder import RunDirRecorder
from assay.run.replay_source import replay_source_checked, replay_sources_unchanged
from assay.run.selection import select_tasks
from assay.run.schedule import ExecutorOptions, Limiter, check_bounds, new_seed, shuffled
from assay.run_budget.meter import RunBudgetMeter
from assay.run_budget.stop import BudgetOutcome, record_stop
from assay.sandbox.base import SandboxBackend
from assay.sandbox.limits import check_task_limits
from assay.sandbox.registry import default_backend_name, get_backend, status_ahead
from assay.sandbox.settings import check_settings as check_sandbox_settings
from assay.spec.budget import Limits, NetworkProfile
from assay.spec.controls import ControlSet
from assay.spec.load import LoadedSuite, harness_network_needs, load_suite
from assay.spec.run_budget import RunBudget
from assay.store.lock import run_lock
from assay.store.resume_check import prepare_resume
from assay.store.run_results import ResultsOnDisk
from assay.store.rundir import RunDir
from assay.store.scratch import make_scratch, remove_scratch
from assay.trace.events import TraceEvent
from assay.verify.lint import lint_task



@dataclass
class RunOptions:
    suite: Path
    agents: list[str]
    repeat: int = 1
    jobs: int = 1
    out: Path | None = None
    sandbox: str | None = None  # backend name; default: bwrap where usable, else host
    network: NetworkProfile = NetworkProfile.harness
    model: str | None = None  # gateway backend spec, e.g. "scripted", "replay:RUN_DIR", "upstream:URL"
    faults_file: Path | None = None  # run-level model faults (YAML list of FaultSpec)
    prices_file: Path | None = None  # price table, USD per million tokens per model
    judge_model: str | None = None  # the judge's model (upstream:URL#MODEL or local), for judge predicates
    lint: bool = True  # refuse a suite with lint errors (assay validate reports them per task instead)
    max_retries: int = 1
    variants: str = "all"
    tasks: list[str] | None = None
    exclude: list[str] | None = None  # ids or shell patterns left out of the plan (recorded: plan.excluded)
    track: str = "controlled"
    keep_scratch: bool = False
    plugins: list[object] = field(default_factory=list)
    run_id: str | None = None
    executor: ExecutorOptions = field(default_factory=ExecutorOptions)
    seed: int | None = None  # trial order; None: a fresh seed (recorded either way)
    max_per_agent: int | None = None
    max_per_model: int | None = None
    deadline_s: float | None = None  # campaign deadline, from the start of execution
    settings: dict[str, Any] | None = None  # where options came from besides the command line (config file, ASSAY_*)
    run_budget: RunBudget | None = None  # --max-cost / --max-tokens over the whole run
    controls: bool = False  # add each task's impossible-task controls to the run (spec/controls.py)
    results: str = "files"  # "log": the results in one append-only log (store/results_log.py)
    read_results: bool = True  # RunOutcome.results read at the end (False: read when first asked, ResultsOnDisk)


@dataclass
class RunOutcome:
    run_dir: RunDir
    manifest: RunManifest
    results: Sequence[AttemptResult]  # every result at the run's end (or, unless read_results, when first asked for)
    hook_failures: list[HookFailure] = field(default_factory=list)  # plugins that raised (recorded, ignored)
    budget: BudgetOutcome | None = None  # the run budget, when the run has one
    notes: list[str] = field(default_factory=list)  # what a resume repaired or removed first, to be said
    stopped: list[str] = field(default_factory=list)  # trials left pending by `assay ctl stop`


def new_run_id(suite: LoadedSuite) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + f"-{suite.spec.name}"


def gateway_record(model: str | None, suite: LoadedSuite, *, faults_file: Path | None = None,
                   prices_file: Path | None = None) -> GatewayRecord:
    if model is None:
        if faults_file or prices_file:
            raise UsageError("--faults and --prices configure the model gateway: pass --model too")
        return GatewayRecord()
    cfg = optional_import("assay.gateway.config")
    if cfg is None:
        raise UsageError("this installation has no model gateway; --model cannot be used")
    return replay_source_checked(cfg.gateway_record_from_cli(model, suite, faults_file=faults_file,
                                                             prices_file=prices_file))


def _judge_record(judge_model: str | None, suite: LoadedSuite) -> GatewayRecord | None:
    """The judge's gateway record; a suite with judge predicates and no judge model is refused."""
    from assay.judge.uses import is_judged

    judged = sorted(t.id for t in suite.tasks if is_judged(t.spec))
    if judge_model is None:
        if judged:
            raise UsageError(f"task(s) {judged} have judge predicates (final or per turn): pass --judge-model "
                             "(fix: --judge-model upstream:BASE_URL#MODEL or local)")
        return None
    from assay.judge.model import judge_record

    return replay_source_checked(judge_record(judge_model))


def _sandbox_record(name: str, backend: SandboxBackend, network: NetworkProfile, limits: Limits) -> SandboxRecord:
    status = backend.status()
    if not status.usable:
        raise UsageError(f"sandbox backend {name!r} is not usable here: {status.detail} (see `assay doctor`)")
    return SandboxRecord(backend=name, network=network, isolated=backend.isolated, limits=limits,
                         details={**backend.facts(), **status.facts})


def environments_ready(suite: LoadedSuite, tasks: list[str] | None, backend_name: str) -> env_runtime.Built:
    """Every task image of the run built (or found) before anything is written: a build that
    fails refuses the run with its file, line and log (docs/environments.md), and the
    ``--exclude`` that runs the other tasks (no trial runs on a half-built image, and no build
    failure is ever scored as the agent's)."""
    if not any(t.spec.environment is not None for t in suite.tasks if not tasks or t.id in tasks):
        return env_runtime.Built({}, {}, {})
    if backend_name != "bwrap":
        raise UsageError(f"tasks with an `environment:` run over their image in the bwrap sandbox; "
                         f"--sandbox {backend_name} cannot (use --sandbox bwrap)")
    built = env_runtime.build_each(suite, tasks)
    if built.failed:
        rest = "--exclude " + ",".join(sorted(built.failed))
        raise SpecError([*built.failed.values(), SpecProblem(
            str(suite.root), "", f"{len(built.failed)} task image(s) do not build here, so no trial ran",
            f"`assay run ... {rest}` runs the other tasks (recorded in the plan and said beside the scores)")])
    return built


def start_run(opts: RunOptions) -> RunOutcome:
    """Plan, check, write the manifest, run. Nothing is written if any check fails."""
    status_ahead(opts.sandbox)  # the sandbox probe runs while the suite loads and the run is checked
    suite = load_suite(opts.suite)
    chosen, excluded = select_tasks(suite, opts.tasks, opts.exclude)
    with controls_added(suite, chosen, opts.controls) as (suite, controls, tasks):
        return _start(opts, suite, controls, tasks, excluded)


def _start(opts: RunOptions, suite: LoadedSuite, controls: ControlSet, tasks: list[str] | None,
           excluded: list[str]) -> RunOutcome:
    if opts.repeat < 1 or opts.jobs < 1:
        raise UsageError("--repeat and --jobs must be at least 1")
    check_bounds(max_per_agent=opts.max_per_agent, max_per_model=opts.max_per_model, deadline_s=opts.deadline_s)
    if opts.network is NetworkProfile.none:
        needs = harness_network_needs(suite, model=opts.model, task_ids=tasks)
        if needs:
            raise UsageError("--network none cuts the sandbox off from the harness, but this run needs "
                             + "; ".join(needs) + " (use --network harness)")
    linted = [t for t in suite.tasks if not tasks or t.id in tasks]  # the tasks this run runs (--task)
    exposed = [f.line() for t in linted for f in lint_task(t) if f.error] if opts.lint else []  # before anything runs
    if exposed:
        raise UsageError(f"assay lint found {len(exposed)} exposure(s) (declare one intended in the task's "
                         "exposure_intended with why, or fix it): " + "; ".join(exposed[:5]))
    adapters, infos = resolve_agents(opts.agents)
    if tasks:
        unknown = sorted(set(tasks) - {t.id for t in suite.tasks})
        if unknown:
            raise UsageError(f"unknown task(s) {unknown}; the suite has {[t.id for t in suite.tasks]}")
    needs = [a.name for a in adapters.values() if a.needs_gateway]
    if needs and opts.model is None:
        raise UsageError(f"agent(s) {needs} need a model: pass --model (e.g. --model scripted)")
    check_sandbox_settings()  # a bad ASSAY_WORKSPACE or launcher: said now, not in every trial
    check_listen()  # the services' address and ports: said now, not after the manifest
    plan = build_plan(suite, list(adapters), repeat=opts.repeat, variants=opts.variants, tasks=tasks)
    check_extras(suite, plan, opts.executor.name)
    check_task_limits(suite, {t.task_id for t in plan})  # before any image is built
    where = where_facts(suite)  # git runs while the sandbox probe (started ahead) still does
    backend_name = opts.sandbox or default_backend_name()
    built = environments_ready(suite, tasks, backend_name)
    backend = get_backend(backend_name)  # the run's one backend object: checked here, used by every attempt
    sandbox = _sandbox_record(backend_name, backend, opts.network, suite.spec.default_limits)
    gateway = gateway_record(opts.model, suite, faults_file=opts.faults_file, prices_file=opts.prices_file)
    if needs and gateway is not None and gateway.backend == "scripted" and not gateway.settings.get("script"):
        unscripted = sorted(t.id for t in linted if t.spec.model_script is None)
        if unscripted:
            raise UsageError(f"--model scripted answers from each task's model_script, and task(s) {unscripted} have "
                             f"none, so agent(s) {needs} would get no answer (fix: add `model_script: model.yaml` "
                             "to them, or run them with another --model)")
    judge = _judge_record(opts.judge_model, suite)
    budget = budget_record(opts.run_budget, suite, plan, adapters, gateway, judge)
    run_id = opts.run_id or new_run_id(suite)
    manifest = build_manifest(
        run_id=run_id, suite=suite, agents=infos, sandbox=sandbox, gateway=gateway, track=opts.track,
        plan=PlanRecord(repeat=opts.repeat, jobs=opts.jobs, max_retries=opts.max_retries, variants=opts.variants,
                        trials=[t.id for t in plan], seed=new_seed() if opts.seed is None else opts.seed,
                        max_per_agent=opts.max_per_agent, max_per_model=opts.max_per_model,
                        executor=opts.executor.name, deadline_s=opts.deadline_s, controls=opts.controls,
                        excluded=excluded, results=opts.results), judge=judge,
        environments={tid: env_runtime.record(info, tid) for tid, info in built.images.items()},
        verifier_environments={tid: env_runtime.record(info, tid) for tid, info in built.verifier.items()},
        extra={"settings": opts.settings} if opts.settings else None, where=where,
    ).model_copy(update={"run_budget": budget})
    manifest = mark_controls(manifest, controls)
    out = opts.out or Path("runs") / run_id
    rd = RunDir.create(out, manifest)
    with run_lock(rd.path):
        return _execute(rd, manifest, suite, adapters, plan, opts.jobs, opts.plugins, opts.keep_scratch, backend,
                        opts.executor, opts.read_results)


def resume_run(run_dir: Path | str, *, jobs: int | None = None, plugins: list[object] | None = None,
               keep_scratch: bool = False, executor: ExecutorOptions | None = None,
               run_budget: RunBudget | None = None, read_results: bool = True) -> RunOutcome:
    """Finish the plan of a run that was stopped; refuses if another runner is on it, or if its
    manifest (exit 3) or its suite changed since. ``run_budget``: a new run-wide budget (recorded
    in the run's budget log; the manifest is never rewritten). ``read_results``: as
    :attr:`RunOptions.read_results`."""
    rd = RunDir.open(run_dir)
    with run_lock(rd.path):
        return _resume_locked(rd, jobs=jobs, plugins=plugins, keep_scratch=keep_scratch,
                              executor=executor or ExecutorOptions(), run_budget=run_budget, read_results=read_results)


def _resume_locked(rd: RunDir, *, jobs: int | None, plugins: list[object] | None, keep_scratch: bool,
                   executor: ExecutorOptions, run_budget: RunBudget | None = None,
                   read_results: bool = True) -> RunOutcome:
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1, not {jobs}")
    check_sandbox_settings()  # the resuming shell's settings, before anything is repaired
    check_listen()  # the services' address and ports: said now, not after the manifest
    replay_sources_unchanged(rd.manifest())  # before anything is repaired
    notes = prepare_resume(rd)  # a torn ledger line repaired or refused (exit 3), killed writes' temp files
    manifest = rd.manifest()
    with controls_added(load_suite(manifest.suite["path"]), None, manifest.plan.controls) as (suite, _, _):
        check_task_limits(suite, {t.id for t in manifest.tasks})  # this host may grant less than the first one
        return _resume_checked(rd, manifest, suite, notes, jobs=jobs, plugins=plugins, keep_scratch=keep_scratch,
                               executor=executor, run_budget=run_budget, read_results=read_results)


def _resume_checked(rd: RunDir, manifest: RunManifest, suite: LoadedSuite, notes: list[str], *, jobs: int | None,
                    plugins: list[object] | None, keep_scratch: bool, executor: ExecutorOptions,
                    run_budget: RunBudget | None, read_results: bool = True) -> RunOutcome:
    if suite.digest != manifest.suite["digest"]:
        changed = [t.id for t in suite.tasks
                   if t.digest != next((r.digest for r in manifest.tasks if r.id == t.id), None)]
        raise RunDirError(f"the suite at {manifest.suite['path']} changed since this run started "
                          f"(tasks changed: {changed or 'suite.yaml'}); resume refused: results would mix versions")
    adapters, infos = resolve_agents(agent_refs(manifest))
    for rec, info in zip(manifest.agents, infos):
        if rec.version != info.version:
            raise RunDirError(f"agent {rec.name!r} is now version {info.version}, the run used {rec.version}; resume refused")
    plan = [parse_trial_id(t) for t in manifest.plan.trials]
    check_extras(suite, plan, executor.name)
    # an image pruned since is built again: the planned tasks' only (not a task --task or --exclude left out)
    environments_ready(suite, sorted({t.task_id for t in plan}), manifest.sandbox.backend)
    change_limits(rd, manifest, run_budget, adapters)  # checked first: a refused value writes nothing
    if jobs is None:  # the run's -j, capped to this host's CPUs (a resume may run on a smaller host); not on a cluster
        jobs = manifest.plan.jobs if executor.name == "ray" else hostload.default_jobs(manifest.plan.jobs)
    outcome = _execute(rd, manifest, suite, adapters, plan, jobs, plugins or [], keep_scratch,
                       get_backend(manifest.sandbox.backend), executor, read_results)
    outcome.notes[:0] = notes
    return outcome


def _execute(rd: RunDir, manifest: RunManifest, suite: LoadedSuite, adapters: dict[str, AgentAdapter],
             plan: list[PlannedTrial], jobs: int, plugins: list[object], keep_scratch: bool,
             backend: SandboxBackend, where: ExecutorOptions, read_results: bool = True) -> RunOutcome:
    policy = RetryPolicy(manifest.plan.max_retries)
    p = manifest.plan
    limiter = Limiter(jobs, per_agent=p.max_per_agent, per_model=p.max_per_model, model=manifest.gateway.model)
    control = RunControl(rd, limiter, run_id=manifest.run_id, plan=shuffled(plan, p.seed))  # `assay ctl`, the live view
    events = Dispatcher(make_plugin_manager([*plugins, control]), writer=RunDirRecorder(rd))
    meter: RunBudgetMeter | None = open_meter(rd, manifest, adapters, events)
    services = build_services(manifest) if where.name == "local" else []  # on a cluster: the head's hub runs them
    listeners: list[Callable[[TraceEvent], Any]] = [events.trace_event]
    secrets: dict[str, str] = {}
    for svc in services:
        secrets.update(getattr(svc, "secrets", lambda: {})())

    contexts: list[RunContext] = []  # the one context main() makes, for what outlives it

    async def main() -> None:
        for svc in services:
            await svc.start()
        try:
            scratch = make_scratch(rd.path)  # under the run lock: what a stopped runner left is removed
            await control.start()
            try:
                ctx = RunContext(run_id=manifest.run_id, run_dir=rd, suite=suite, agents=adapters,
                                 backend=backend, scratch_root=scratch,
                                 network=manifest.sandbox.network, limits=manifest.sandbox.limits, services=services,
                                 model=manifest.gateway.model, track=manifest.track, secrets=secrets,
                                 listeners=listeners, keep_scratch=keep_scratch, run_budget=meter)
                contexts.append(ctx)
                pending = pending_trials(rd, shuffled(plan, p.seed), policy)  # a resume keeps the order
                events.notify("assay_run_started", None, run_dir=rd, manifest=manifest, planned=len(plan),
                              pending=len(pending))
                if meter is not None:
                    events.notify("assay_run_budget", None, spend=meter.snapshot())
                await within_deadline(_executor(where, ctx, manifest, pending, events, policy, limiter, control),
                                      p.deadline_s, ctx, pending, events.writer)
            finally:
                await control.close()
                if not keep_scratch:
                    remove_scratch(rd.path)
        finally:
            for svc in services:
                await svc.stop()

    try:
        asyncio.run(main())
        judge = judge_totals(services) or (contexts[0].judge_spend if contexts else None)  # local, or the hub's
        budget = record_stop(rd, meter, pending_trials(rd, plan, policy), judge) if meter is not None else None
        # every result read back (18.3 s and 1.26 GB at 2x10^5 trials), or when first asked for (the CLI never asks)
        results: Sequence[AttemptResult] = rd.results() if read_results else ResultsOnDisk(rd)
        events.notify("assay_run_finished", None, run_dir=rd, results=results)
    finally:
        events.write_run_failures(rd.path)
    stopped = [t.id for t in pending_trials(rd, plan, policy)] if limiter.capacity.stopped else []
    return RunOutcome(rd, manifest, results, hook_failures=list(events.failures), budget=budget, stopped=stopped)


def _executor(where: ExecutorOptions, ctx: RunContext, manifest: RunManifest, pending: list[PlannedTrial],
              events: Dispatcher, policy: RetryPolicy, limiter: Limiter,
              control: RunControl | None = None) -> Awaitable[None]:
    """The chosen executor's run of ``pending`` (Ray, and the procs executor, imported only when chosen)."""
    if where.name == "ray":
        from assay.run.cluster.executor import execute_ray

        return execute_ray(ctx, manifest, pending, events, policy=policy, limiter=limiter, options=where,
                           control=control)
    if where.name == "procs":
        from assay.run.cluster.procs import execute_procs

        return execute_procs(ctx, manifest, pending, events, policy=policy, limiter=limiter, options=where,
                             control=control)
    return execute(ctx, pending, events, limiter=limiter, policy=policy, control=control)
