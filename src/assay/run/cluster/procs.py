"""``--executor procs``: the Ray executor's split on one machine, without Ray.

    head (this process): plan, limits, retries, the run budget, the run directory's one writer,
      │                  and the services (a ServiceHub in this process: gateway, worlds, judge)
      └─ N worker processes (spawned): each a NodeWorker running attempts, returning them as data

One event loop in one process does every attempt's harness work in a local run (workspace,
sandbox, agent, verifier, evidence: tens of milliseconds of CPU each); here that work is spread
over ``--workers`` processes (default: the CPUs this process may use, never more than ``--jobs``),
while what must stay single (the writer, the meter, the services) stays on the head. The head's
trial loop is the Ray executor's (:class:`~assay.run.cluster.campaign.HeadCampaign`), the worker
is the Ray node's :class:`~assay.run.cluster.worker.NodeWorker`, the hub the Ray hub's
:class:`~assay.run.cluster.hub.ServiceHub`; only the transport differs (a socket per worker,
:mod:`assay.run.cluster.wire`). A worker that dies has its attempts closed as partial
``infra_error``/``interrupted`` (kept) and retried, and a new worker takes its place; one that
does not answer within twice the task's wall time plus the grace is killed and replaced the same
way. Each worker's folders live under the run's scratch (removed with it, also after a crash).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError
from assay.records.manifest import RunManifest
from assay.run.attempt.trial import RunContext
from assay.run.cluster import procs_worker
from assay.run.cluster.campaign import STOP_WAIT_S, HeadCampaign, Node, NodePool, WorkerLost
from assay.run.cluster.hub import ServiceHub
from assay.run.cluster.wire import Peer, PeerLost
from assay.run.cluster.worker import FinishedAttempt
from assay.run.executor import RetryPolicy
from assay.run.hooks import Dispatcher
from assay.run.hostload import cpus
from assay.run.plan import PlannedTrial
from assay.run.schedule import ExecutorOptions, Limiter

#: the hub's methods a worker may call (what HubProxy sessions call)
HUB_CALLS = ("open", "close")


@dataclass
class WorkerProcess:
    """One spawned worker: its process, its end of the socket, the task reading it."""

    process: Any  # multiprocessing's SpawnProcess
    peer: Peer
    serving: asyncio.Task[None]
    ended: asyncio.Task[str] | None = None
    replaced: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def end(self) -> asyncio.Task[str]:
        """Kill it if it still runs (ours: the head started it) and reap it, once; the task's
        value says how it ended. Whatever still waits on it fails with that."""
        if self.ended is None:
            self.ended = asyncio.create_task(self._end())
        return self.ended

    async def _end(self) -> str:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.process.sentinel)
        if self.process.exitcode is None:
            self.process.kill()
        await loop.run_in_executor(None, self.process.join, STOP_WAIT_S)
        code = self.process.exitcode
        how = f"worker process {self.pid} ended " + (f"(signal {-code})" if code is not None and code < 0
                                                       else f"(exit code {code})")
        self.peer.lose(how)
        return how


def worker_count(options: ExecutorOptions, jobs: int) -> int:
    """How many worker processes: ``--workers``, else this process's usable CPUs; at most ``jobs``."""
    wanted = options.workers if options.workers is not None else cpus()
    return max(1, min(wanted, jobs))


class ProcsCampaign(HeadCampaign):
    """One campaign whose attempts run in worker processes of this machine."""

    worker_noun = "worker process"
    hub_errors = (TimeoutError,)

    def __init__(self, ctx: RunContext, manifest: RunManifest, events: Dispatcher, policy: RetryPolicy,
                 limiter: Limiter, options: ExecutorOptions):
        super().__init__(ctx, manifest, events, policy, limiter, options)
        meter = ctx.run_budget
        self.hub = ServiceHub(manifest.model_dump_json(), run_budget=meter.snapshot() if meter is not None else None,
                              run_dir=str(ctx.run_dir.path), root=ctx.scratch_root / "hub")
        self.hub.root.mkdir(mode=0o700)
        self.info: dict[str, Any] = {}
        self.workers: list[WorkerProcess] = []  # every one started
        self.spawned = 0  # workers begun so far (their ids: w1, w2, ...)
        self.slots = max(1, limiter.jobs)
        self.spawner = multiprocessing.get_context("spawn")
        self.stopping = False

    async def start(self) -> None:
        self.info = await self.hub.start()
        count = worker_count(self.options, self.limiter.jobs)
        nodes = await asyncio.gather(*(self._spawn() for _ in range(count)))
        self.pool = NodePool(list(nodes))

    async def _spawn(self) -> Node:
        """Start one worker process and have it ready for this campaign."""
        self.spawned += 1
        node_id = f"w{self.spawned}"
        root = self.ctx.scratch_root / "workers" / node_id
        root.mkdir(parents=True, mode=0o700)
        mine, theirs = self.spawner.Pipe(duplex=True)  # a socket pair on POSIX
        proc = self.spawner.Process(target=procs_worker.main, args=(theirs,), name=f"assay-{node_id}", daemon=True)
        proc.start()
        theirs.close()
        sock = socket.socket(fileno=os.dup(mine.fileno()))
        mine.close()
        reader, writer = await asyncio.open_connection(sock=sock)
        peer = Peer(reader, writer, self._hub_call_from_worker)
        worker = WorkerProcess(proc, peer, asyncio.create_task(peer.serve()))
        self.workers.append(worker)
        node = Node(f"{node_id}:{proc.pid}", self.slots, actor=worker)
        # its death, even while it runs no attempt and whatever its socket does: replaced
        asyncio.get_running_loop().add_reader(proc.sentinel, self._replace, node)
        try:
            await asyncio.wait_for(peer.call("start", self.manifest.model_dump_json(), self.info["services"],
                                             self.info["contracts"], node.id, str(root)), STOP_WAIT_S * 4)
        except (PeerLost, TimeoutError) as e:
            how = await worker.end()
            raise UsageError(f"a worker process of --executor procs did not start ({how}); its error, if any, is "
                             "above (from a Python script: start the run under `if __name__ == \"__main__\":`, "
                             "since a spawned worker imports the script again)") from e
        except BaseException:
            await worker.end()  # a worker that cannot run this campaign (suite or agent differs): say so, run nothing
            raise
        return node

    def _replace(self, node: Node) -> asyncio.Task[None]:
        """``node``'s worker is gone or given up: it is ended and reaped, and (once, unless the
        campaign is stopping) a new worker takes its place in the pool."""
        worker: WorkerProcess = node.actor
        if worker.replaced is None:
            node.alive = False  # no new attempt for it
            worker.replaced = asyncio.create_task(self._respawn(worker))
        return worker.replaced

    async def _respawn(self, worker: WorkerProcess) -> None:
        await worker.end()
        if not self.stopping and self.pool is not None:
            await self.pool.add(await self._spawn())

    async def _hub_call_from_worker(self, method: str, args: tuple[Any, ...]) -> Any:
        if method not in HUB_CALLS:
            raise ValueError(f"a worker may not call the hub's {method!r}")
        return await getattr(self.hub, method)(*args)

    async def hub_call(self, method: str, *args: Any) -> Any:
        return await getattr(self.hub, method)(*args)

    async def dispatch(self, node: Node, trial_id: str, attempt: int, retry_reason: str | None,
                       limit: float) -> FinishedAttempt:
        worker: WorkerProcess = node.actor
        try:
            return await asyncio.wait_for(worker.peer.call("run", trial_id, attempt, retry_reason), limit)
        except PeerLost as e:
            raise WorkerLost(await worker.end()) from e

    async def lost(self, node: Node, hung: bool) -> None:
        """A dead or hung worker is ended (its other attempts are closed the same way) and replaced."""
        await self._replace(node)

    async def stop(self) -> None:
        """Record the hub's spend, stop the services, close every worker (killed if it does not end)."""
        self.stopping = True
        try:
            await self.budget_reached()  # the head's record of the spend
            self.ctx.judge_spend = await self.hub.judge_spend()
        finally:
            try:
                await self.hub.stop()
            finally:
                await self._close_workers()

    async def _close_workers(self) -> None:
        replacing = [w.replaced for w in self.workers if w.replaced is not None]
        await asyncio.gather(*replacing, return_exceptions=True)  # a worker being started is closed too
        workers = list(self.workers)
        await asyncio.gather(*(asyncio.wait_for(w.peer.call("close"), STOP_WAIT_S) for w in workers
                               if w.peer.gone is None), return_exceptions=True)
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(None, w.process.join, STOP_WAIT_S) for w in workers))
        await asyncio.gather(*(w.end() for w in workers))  # what did not end when asked is killed; all reaped
        for w in workers:
            await w.peer.close()
            w.serving.cancel()
        await asyncio.gather(*(w.serving for w in workers), return_exceptions=True)


async def execute_procs(ctx: RunContext, manifest: RunManifest, plan: list[PlannedTrial], events: Dispatcher, *,
                        policy: RetryPolicy, limiter: Limiter, options: ExecutorOptions, control: Any = None) -> None:
    """Run every pending trial of ``plan`` on worker processes; returns when all are done.
    ``control`` (:class:`~assay.run.control.RunControl`) may requeue trials while they run, as locally."""
    await ProcsCampaign(ctx, manifest, events, policy, limiter, options).drive(plan, control)
