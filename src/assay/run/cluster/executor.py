"""The Ray executor: the local executor's plan, run directory and results, attempts on a cluster.

    head (this process): plan, limits, retries, the run directory's one writer (the recorder)
      ├─ ServiceHub actor, pinned to the head node: gateway, worlds, judge (ray_hub)
      └─ one NodeWorker actor per sandbox node: runs attempts, returns them as data (ray_worker)

Sandbox nodes are the nodes advertising the ``assay_sandbox`` resource (its count is the
node's attempt slots), else every node with CPUs. An attempt whose node dies (process or node)
is closed as a partial ``infra_error``/``interrupted`` (kept) and retried once, on another node
when there is one; Ray itself never re-runs an attempt (no task retries, no actor restarts),
so nothing is scored twice. A node whose worker does not answer within twice the task's wall
time plus a grace has its attempt closed the same way and gets no new one. The run budget's one
meter lives in the hub (every node's model calls pass its gateway); the head mirrors it before
each attempt. Importing this module imports Ray: only ``--executor ray`` does.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay._optional import missing_extra
from assay.errors import RunDirError, UsageError
from assay.records.manifest import RunManifest
from assay.records.results import AttemptResult
from assay.run.attempt.trial import RunContext, new_trace
from assay.run.closing import closed_attempt
from assay.run.cluster.hub import ADVERTISE_ENV, ServiceHub
from assay.run.cluster.verifiers import VERIFIER_RESOURCE, remote_verify_over, start_verifiers, verifier_nodes
from assay.run.cluster.worker import FinishedAttempt, NodeWorker
from assay.run.executor import RetryPolicy, close_interrupted
from assay.run.hooks import Dispatcher
from assay.run.plan import PlannedTrial
from assay.run.requeue import Requeue, attach, may_start, retry_reason
from assay.run.schedule import ExecutorOptions, Limiter, answer_grace, run_all
from assay.spec.digest import sha256_bytes
from assay.store.rundir import write_exclusive

try:
    import ray
    from ray.exceptions import RayActorError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ModuleNotFoundError as e:  # pragma: no cover - the extra is missing
    raise UsageError(f"--executor ray {missing_extra('ray')}") from e

#: the custom resource a sandbox node advertises (its count: attempts at once); the k8s render uses it
SANDBOX_RESOURCE = "assay_sandbox"
#: where the head's services listen and are reached: the settings of the `assay run` process
#: are the hub's (an actor's environment is otherwise its raylet's); secrets are never sent this way
SERVICE_SETTINGS = ("ASSAY_GATEWAY_HOST", "ASSAY_GATEWAY_PORT", "ASSAY_TOOLS_PORT", "ASSAY_SERVICES_ADVERTISE")
#: attempts of one trial closed because their node died, after which the trial is left for a resume
MAX_NODE_LOSSES = 2
#: how long the end of a campaign waits for each actor to clean up
STOP_WAIT_S = 30.0


@dataclass
class Node:
    id: str
    slots: int
    actor: Any = None
    busy: int = 0
    alive: bool = True  # False: gone, or hung (given no more attempts)
    hung: bool = False  # its worker kept an attempt past the answer timeout (killed at the end)


class NoNodes(RunDirError):
    """Every sandbox node of the cluster is gone: the campaign stops (resumable)."""


class NodePool:
    """Free attempt slots per node; an attempt retried after a node loss prefers another node."""

    def __init__(self, nodes: list[Node]):
        self.nodes = {n.id: n for n in nodes}
        self._cond = asyncio.Condition()

    async def acquire(self, avoid: set[str]) -> Node:
        async with self._cond:
            while True:
                alive = [n for n in self.nodes.values() if n.alive]
                if not alive:
                    raise NoNodes("every sandbox node of the Ray cluster is gone; `assay run --resume` when it is back")
                free = [n for n in alive if n.busy < n.slots]
                other = any(n.id not in avoid for n in alive)
                pick = [n for n in free if n.id not in avoid] if other else free
                if pick:
                    node = min(pick, key=lambda n: (n.busy / n.slots, n.id))
                    node.busy += 1
                    return node
                await self._cond.wait()

    async def release(self, node: Node, *, lost: bool = False, hung: bool = False) -> None:
        """An attempt of ``node`` ended; a node lost or hung gets no more attempts."""
        async with self._cond:
            node.busy -= 1
            if lost or hung:
                node.alive = False
            node.hung = node.hung or hung
            self._cond.notify_all()


def sandbox_nodes(nodes: list[dict[str, Any]]) -> list[Node]:
    """The nodes that run sandboxes, with their slots."""
    alive = [n for n in nodes if n.get("Alive")]
    tagged = [Node(n["NodeID"], int(n["Resources"][SANDBOX_RESOURCE])) for n in alive
              if n["Resources"].get(SANDBOX_RESOURCE, 0) >= 1]
    return tagged or [Node(n["NodeID"], int(n["Resources"].get("CPU", 0))) for n in alive
                      if n["Resources"].get("CPU", 0) >= 1 and not n["Resources"].get(VERIFIER_RESOURCE)]


class _RayNodeWorker(NodeWorker):
    """A NodeWorker whose hub calls go through Ray."""

    def __init__(self, manifest_json: str, hub: Any, services: list[str], contracts: dict[str, Any],
                 verifiers: list[Any]):
        async def call(method: str, *args: Any) -> Any:
            return await getattr(hub, method).remote(*args)

        super().__init__(manifest_json, call, services, contracts, ray.get_runtime_context().get_node_id(),
                         remote_verify=remote_verify_over(verifiers) if verifiers else None)


def connect(address: str | None) -> None:
    """Join the cluster as its driver (logs stay on the nodes; nothing is sent anywhere else).

    No address: a cluster of assay's own (:func:`own_cluster`), never one found on the machine."""
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {}
    if address is None:
        address, kwargs = "local", own_cluster()
    ray.init(address=address, logging_level="ERROR", log_to_driver=False, include_dashboard=False,
             configure_logging=False, **kwargs)


def own_cluster() -> dict[str, Any]:
    """What makes a local cluster assay's own: a fresh token in the environment (Ray would read,
    or write, ``~/.ray/auth_token`` in the user's home) and a private temp folder (Ray's default
    ``/tmp/ray`` names the machine's current cluster), removed when this process ends."""
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ.pop("RAY_AUTH_TOKEN_PATH", None)
    # Ray read its settings when it was imported: make this process see token mode and the token
    # (what Ray's own ``ray.init`` does when it turns token mode on by default)
    from ray._raylet import AuthenticationTokenLoader, Config
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()
    # Ray's socket paths must stay under 108 bytes: a short folder, not a long TMPDIR
    temp = tempfile.mkdtemp(prefix="assay-ray-", dir="/tmp" if os.path.isdir("/tmp") else None)

    def _end() -> None:
        ray.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
    atexit.register(_end)
    return {"_temp_dir": temp}


class RayCampaign:
    """One campaign on a Ray cluster, driven from this process (the head)."""

    def __init__(self, ctx: RunContext, manifest: RunManifest, events: Dispatcher, policy: RetryPolicy,
                 limiter: Limiter, options: ExecutorOptions):
        self.ctx, self.manifest, self.events, self.policy, self.limiter = ctx, manifest, events, policy, limiter
        self.options = options
        self.hub: Any = None
        self.pool: NodePool | None = None
        self.verifiers: list[Any] = []
        self.uses_model = {name: a.needs_gateway for name, a in ctx.agents.items()}
        self.grace_s = answer_grace()
        self.requeue: Requeue | None = None  # `assay ctl requeue-infra`, when the run has a control

    async def start(self) -> None:
        head = ray.get_runtime_context().get_node_id()
        pin = NodeAffinitySchedulingStrategy(head, soft=False)
        address = self.options.services_address or os.environ.get(ADVERTISE_ENV) or ray.util.get_node_ip_address()
        manifest_json = self.manifest.model_dump_json()
        meter = self.ctx.run_budget
        settings = {k: os.environ[k] for k in SERVICE_SETTINGS if os.environ.get(k)}  # this process's
        self.hub = ray.remote(ServiceHub).options(num_cpus=0, scheduling_strategy=pin, max_restarts=0,
                                                  max_task_retries=0,
                                                  **({"runtime_env": {"env_vars": settings}} if settings else {})).remote(
            manifest_json, address=address, run_budget=meter.snapshot() if meter is not None else None,
            run_dir=str(self.ctx.run_dir.path))
        info = await self.hub.start.remote()
        all_nodes = ray.nodes()
        nodes = sandbox_nodes(all_nodes)
        self.verifiers = start_verifiers(manifest_json, verifier_nodes(all_nodes))
        checked = await asyncio.gather(*(v.facts.remote() for v in self.verifiers), return_exceptions=True)
        for r in checked:
            if isinstance(r, BaseException):
                raise r  # a verifier node that cannot verify this campaign (another suite): run nothing
        if not nodes:
            raise UsageError(f"the Ray cluster has no node to run sandboxes on (none advertises {SANDBOX_RESOURCE!r} "
                             "or has CPUs); start workers with `ray start --address HEAD --resources "
                             f"'{{\"{SANDBOX_RESOURCE}\": N}}'`")
        worker = ray.remote(_RayNodeWorker)
        for n in nodes:
            n.actor = worker.options(num_cpus=0, max_concurrency=max(1, n.slots), max_restarts=0, max_task_retries=0,
                                     scheduling_strategy=NodeAffinitySchedulingStrategy(n.id, soft=False)).remote(
                manifest_json, self.hub, info["services"], info["contracts"], self.verifiers)
        ready = await asyncio.gather(*(n.actor.facts.remote() for n in nodes), return_exceptions=True)
        for n, r in zip(nodes, ready):
            if isinstance(r, RayActorError):
                n.alive = False
            elif isinstance(r, BaseException):
                raise r  # a node that cannot run this campaign (suite or agent differs): say so, run nothing
        self.pool = NodePool(nodes)

    async def budget_reached(self) -> bool:
        """The run budget as the hub's meter (the one that admits every node's calls) has it,
        mirrored into the head's: reached means no new attempt starts."""
        meter = self.ctx.run_budget
        if meter is None or self.hub is None:
            return False
        meter.mirror(await self.hub.run_spend.remote())
        return meter.reached

    async def stop(self) -> None:
        if self.hub is not None:
            try:
                await asyncio.wait_for(self.budget_reached(), STOP_WAIT_S)  # the head's record of the spend
                self.ctx.judge_spend = await asyncio.wait_for(self.hub.judge_spend.remote(), STOP_WAIT_S)
            except (RayActorError, TimeoutError):
                pass
            try:
                await asyncio.wait_for(self.hub.stop.remote(), STOP_WAIT_S)
            except (RayActorError, TimeoutError):
                pass
        every = list(self.pool.nodes.values()) if self.pool else []
        nodes = [n for n in every if n.alive]
        await asyncio.gather(*(asyncio.wait_for(n.actor.close.remote(), STOP_WAIT_S) for n in nodes),
                             return_exceptions=True)
        for n in nodes + [n for n in every if n.hung]:  # a hung worker is killed, its sandboxes with it
            ray.kill(n.actor, no_restart=True)
        await asyncio.gather(*(asyncio.wait_for(v.close.remote(), STOP_WAIT_S) for v in self.verifiers),
                             return_exceptions=True)
        for v in self.verifiers:
            ray.kill(v, no_restart=True)

    async def run_trial(self, trial: PlannedTrial, requeued: str | None = None) -> None:
        """The trial's attempts, within its limiter slot; ``requeued``: who requeued its
        infrastructure error (`assay ctl requeue-infra`: one more attempt now)."""
        with self.requeue.running(trial.id) if self.requeue is not None else nullcontext():
            async with self.limiter.slot(trial, uses_model=self.uses_model.get(trial.agent, True)):
                await self._trial(trial, requeued)

    async def _trial(self, trial: PlannedTrial, requeued: str | None = None) -> None:
        rd, ctx, events = self.ctx.run_dir, self.ctx, self.events
        history = close_interrupted(rd, ctx, trial, events.writer)
        if not may_start(self.policy, history, requeued):
            return
        trace = new_trace(ctx, trial)
        events.attach(trace)
        avoid: set[str] = set()
        try:
            while True:
                if await self.budget_reached():
                    return  # the run budget is spent: no new attempt; the trial stays pending
                await self.limiter.admit()  # `assay ctl pause` holds it here, `stop` ends it
                attempt = (history[-1].attempt + 1) if history else 1
                reason, requeued = retry_reason(history, requeued), None
                result = await self._attempt(trial, attempt, reason, trace, avoid)
                history.append(result)
                final = not self.policy.should_retry(history) or len(avoid) >= MAX_NODE_LOSSES
                events.notify("assay_attempt_finished", trial.id, result=result, final=final, events=trace.take())
                if final:
                    return
        finally:
            events.detach(trace)
            events.writer.write_events(trial.id, trace.take())

    async def _attempt(self, trial: PlannedTrial, attempt: int, retry_reason: str | None, trace: Any,
                       avoid: set[str]) -> AttemptResult:
        assert self.pool is not None
        node = await self.pool.acquire(avoid)
        lost = hung = False
        try:
            started = time.time()
            self.events.notify("assay_attempt_started", trial.id, trial_id=trial.id, attempt=attempt,
                               retry_reason=retry_reason)
            ref = node.actor.run.remote(trial.id, attempt, retry_reason)
            limit = 2 * self.ctx.suite.task(trial.task_id).spec.budget.wall_time_s + self.grace_s
            try:
                finished: FinishedAttempt = await asyncio.wait_for(asyncio.shield(ref), limit)
            except asyncio.CancelledError:
                ray.cancel(ref)  # the deadline: the worker's attempt is cancelled, its sandbox released
                raise
            except (RayActorError, TimeoutError) as e:
                lost = isinstance(e, RayActorError)  # a node that died
                hung = not lost  # its attempts in flight may still answer; it gets no new one
                if hung:
                    ray.cancel(ref)
                avoid.add(node.id)
                await self._abandon(trial, attempt)
                what = "was lost" if lost else f"did not answer in {limit:.0f} s"
                return closed_attempt(self.ctx, trial, attempt, trace, reason="interrupted", started=started,
                                      retry_reason=retry_reason, sandbox={"node_id": node.id},
                                      message=f"the worker node running this attempt {what}: {type(e).__name__}")
            return self.receive(trial, attempt, finished, trace)
        finally:
            await self.pool.release(node, lost=lost, hung=hung)

    async def _abandon(self, trial: PlannedTrial, attempt: int) -> None:
        """Close a lost attempt's sessions on the hub; what they kept for it (the gateway's
        recording: a resume counts its spend) goes into its attempt folder."""
        try:
            files = await asyncio.wait_for(self.hub.abandon.remote(f"{trial.id}#{attempt}"), STOP_WAIT_S)
        except (RayActorError, TimeoutError):
            return
        own = f"attempts/{attempt}/"
        store_trial_files(self.ctx.run_dir.trial_dir(trial.id), {k: v for k, v in files.items() if k.startswith(own)})

    def receive(self, trial: PlannedTrial, attempt: int, fin: FinishedAttempt, trace: Any) -> AttemptResult:
        """Take a finished attempt from a worker: its artifacts and files stored (by the head),
        its events renumbered into the trial's trace; the recorder then writes events and result."""
        res = fin.result
        if (res.run_id, res.trial_id, res.attempt) != (self.ctx.run_id, trial.id, attempt):
            raise RunDirError(f"node {fin.node_id[:12]} answered for {res.trial_id}#{res.attempt} of run {res.run_id}, "
                              f"not {trial.id}#{attempt}")
        rd = self.ctx.run_dir
        for digest, data in fin.artifacts.items():
            if sha256_bytes(data) != digest:
                raise RunDirError(f"node {fin.node_id[:12]} sent an artifact whose bytes are not {digest[:12]}")
            rd.put_artifact(data)
        store_trial_files(rd.trial_dir(trial.id), fin.files)
        trace.attempt = attempt
        for ev in fin.events:
            trace.emit(ev.source, ev.kind, ev.data, ts=ev.ts)
        return res


def store_trial_files(trial_dir: Path, files: dict[str, bytes]) -> None:
    """The files an attempt kept in its trial folder (service recordings, native sessions), written
    by the head; a path leaving the folder is refused, a file already there is kept as it is
    unless its bytes changed (a store the services update across attempts)."""
    root = trial_dir.resolve()
    for rel, data in sorted(files.items()):
        dest = trial_dir / rel
        if rel.startswith("/") or ".." in Path(rel).parts or not dest.resolve().is_relative_to(root):
            raise RunDirError(f"a worker sent a file outside its trial folder: {rel!r}")
        if dest.is_file() and dest.read_bytes() == data:
            continue
        if dest.exists():
            tmp = dest.with_name(".tmp-" + dest.name)
            tmp.write_bytes(data)
            tmp.replace(dest)
        else:
            write_exclusive(dest, data)


async def execute_ray(ctx: RunContext, manifest: RunManifest, plan: list[PlannedTrial], events: Dispatcher, *,
                      policy: RetryPolicy, limiter: Limiter, options: ExecutorOptions, control: Any = None) -> None:
    """Run every pending trial of ``plan`` on the cluster; returns when all are done. ``control``
    (:class:`~assay.run.control.RunControl`) may requeue trials while they run, as locally."""
    connect(options.address)
    campaign = RayCampaign(ctx, manifest, events, policy, limiter, options)
    campaign.requeue = attach(control, ctx.run_dir, policy, plan, campaign.run_trial)
    try:
        await campaign.start()
        await run_all((campaign.run_trial(t) for t in plan), campaign.requeue.more if campaign.requeue else None)
    finally:
        await campaign.stop()
