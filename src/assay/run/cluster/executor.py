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
each attempt. The head's trial loop is :class:`~assay.run.cluster.campaign.HeadCampaign`, shared with
``--executor procs``. Importing this module imports Ray: only ``--executor ray`` does.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import secrets
import shutil
import tempfile
from typing import Any

from assay._optional import missing_extra
from assay.errors import UsageError
from assay.records.manifest import RunManifest
from assay.run.attempt.trial import RunContext
from assay.run.cluster.campaign import (STOP_WAIT_S, HeadCampaign, Node, NodePool, NoNodes, WorkerLost,
                                        store_trial_files)
from assay.run.cluster.hub import ADVERTISE_ENV, ServiceHub
from assay.run.cluster.verifiers import VERIFIER_RESOURCE, remote_verify_over, start_verifiers, verifier_nodes
from assay.run.cluster.worker import FinishedAttempt, NodeWorker
from assay.run.executor import RetryPolicy
from assay.run.hooks import Dispatcher
from assay.run.plan import PlannedTrial
from assay.run.schedule import ExecutorOptions, Limiter

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
#: shared with the procs executor (run/cluster/campaign.py), named here too
__all__ = ["NoNodes", "Node", "NodePool", "RayCampaign", "execute_ray", "sandbox_nodes", "store_trial_files"]


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


class RayCampaign(HeadCampaign):
    """One campaign on a Ray cluster, driven from this process (the head)."""

    hub_errors = (RayActorError, TimeoutError)

    def __init__(self, ctx: RunContext, manifest: RunManifest, events: Dispatcher, policy: RetryPolicy,
                 limiter: Limiter, options: ExecutorOptions):
        super().__init__(ctx, manifest, events, policy, limiter, options)
        self.hub: Any = None
        self.verifiers: list[Any] = []

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
        return self.hub is not None and await super().budget_reached()

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

    async def dispatch(self, node: Node, trial_id: str, attempt: int, retry_reason: str | None,
                       limit: float) -> FinishedAttempt:
        ref = node.actor.run.remote(trial_id, attempt, retry_reason)
        try:
            return await asyncio.wait_for(asyncio.shield(ref), limit)
        except asyncio.CancelledError:
            ray.cancel(ref)  # the deadline: the worker's attempt is cancelled, its sandbox released
            raise
        except RayActorError as e:
            raise WorkerLost(type(e).__name__) from e  # a node that died
        except TimeoutError:
            ray.cancel(ref)  # a node that hangs: its attempt cancelled there
            raise

    async def hub_call(self, method: str, *args: Any) -> Any:
        return await getattr(self.hub, method).remote(*args)


async def execute_ray(ctx: RunContext, manifest: RunManifest, plan: list[PlannedTrial], events: Dispatcher, *,
                      policy: RetryPolicy, limiter: Limiter, options: ExecutorOptions, control: Any = None) -> None:
    """Run every pending trial of ``plan`` on the cluster; returns when all are done. ``control``
    (:class:`~assay.run.control.RunControl`) may requeue trials while they run, as locally."""
    connect(options.address)
    await RayCampaign(ctx, manifest, events, policy, limiter, options).drive(plan, control)
