"""The head's side of a campaign whose attempts run in other processes: what both remote
executors share (``--executor ray``: node actors; ``--executor procs``: worker processes).

The head keeps the plan, limits, retries, the run budget's mirror and the run directory's one
writer; a worker runs an attempt (``run_attempt`` in :class:`~assay.run.cluster.worker.NodeWorker`)
and hands it back as a :class:`~assay.run.cluster.worker.FinishedAttempt`. An attempt whose worker
is lost (its process or node died: :class:`WorkerLost`) or does not answer in time is closed as a
partial ``infra_error``/``interrupted`` (kept) and retried, on another worker when there is one; a
trial that lost :data:`MAX_NODE_LOSSES` attempts so is left for a resume. An executor subclasses
:class:`HeadCampaign` with how it reaches a worker (:meth:`HeadCampaign.dispatch`) and the hub
(:meth:`HeadCampaign.hub_call`). Imports nothing of Ray.
"""

from __future__ import annotations

import abc

import asyncio
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import RunDirError
from assay.records.manifest import RunManifest
from assay.records.results import AttemptResult
from assay.run.attempt.trial import RunContext, new_trace
from assay.run.closing import closed_attempt
from assay.run.cluster.worker import FinishedAttempt
from assay.run.executor import RetryPolicy, close_interrupted
from assay.run.hooks import Dispatcher
from assay.run.plan import PlannedTrial
from assay.run.requeue import Requeue, attach, may_start, retry_reason
from assay.run.schedule import ExecutorOptions, Limiter, answer_grace, run_all
from assay.spec.digest import sha256_bytes
from assay.store.rundir import write_exclusive

#: attempts of one trial closed because their node died, after which the trial is left for a resume
MAX_NODE_LOSSES = 2
#: how long the end of a campaign waits for each worker to clean up
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


class WorkerLost(Exception):
    """The worker running an attempt is gone (its process or its node died); the message names how."""


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

    async def add(self, node: Node) -> None:
        """A node that joined (a worker process started in place of a lost one)."""
        async with self._cond:
            self.nodes[node.id] = node
            self._cond.notify_all()


class HeadCampaign(abc.ABC):
    """One campaign driven from this process (the head); attempts run wherever ``dispatch`` sends them."""

    #: what the workers are called in an interrupted attempt's message
    worker_noun = "worker node"
    #: what a hub call raises when the hub is gone (besides a timeout)
    hub_errors: tuple[type[BaseException], ...] = (TimeoutError,)

    def __init__(self, ctx: RunContext, manifest: RunManifest, events: Dispatcher, policy: RetryPolicy,
                 limiter: Limiter, options: ExecutorOptions):
        self.ctx, self.manifest, self.events, self.policy, self.limiter = ctx, manifest, events, policy, limiter
        self.options = options
        self.pool: NodePool | None = None
        self.uses_model = {name: a.needs_gateway for name, a in ctx.agents.items()}
        self.grace_s = answer_grace()
        self.requeue: Requeue | None = None  # `assay ctl requeue-infra`, when the run has a control

    @abc.abstractmethod
    async def start(self) -> None:
        """Start the hub and the workers; the pool is ready after it."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Record the hub's spend on the head, stop the hub and every worker (on every path out)."""

    async def drive(self, plan: list[PlannedTrial], control: Any = None) -> None:
        """Run every pending trial of ``plan``; returns when all are done. ``control``
        (:class:`~assay.run.control.RunControl`) may requeue trials while they run, as locally."""
        self.requeue = attach(control, self.ctx.run_dir, self.policy, plan, self.run_trial)
        try:
            await self.start()
            await run_all((self.run_trial(t) for t in plan), self.requeue.more if self.requeue else None)
        finally:
            await self.stop()

    @abc.abstractmethod
    async def dispatch(self, node: Node, trial_id: str, attempt: int, retry_reason: str | None,
                       limit: float) -> FinishedAttempt:
        """Run the attempt on ``node``'s worker and return it; :class:`WorkerLost` when the worker
        dies, :class:`TimeoutError` past ``limit`` seconds (the attempt cancelled there), and on
        cancellation the worker's attempt is cancelled (its sandbox released)."""

    @abc.abstractmethod
    async def hub_call(self, method: str, *args: Any) -> Any:
        """Call the service hub's ``method`` (wherever the hub runs)."""

    async def lost(self, node: Node, hung: bool) -> None:
        """``node``'s worker died (or hung): what the executor does about it beyond the pool."""

    async def budget_reached(self) -> bool:
        """The run budget as the hub's meter (the one that admits every worker's calls) has it,
        mirrored into the head's: reached means no new attempt starts."""
        meter = self.ctx.run_budget
        if meter is None:
            return False
        meter.mirror(await self.hub_call("run_spend"))
        return meter.reached

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
            limit = 2 * self.ctx.suite.task(trial.task_id).spec.budget.wall_time_s + self.grace_s
            try:
                finished = await self.dispatch(node, trial.id, attempt, retry_reason, limit)
            except (WorkerLost, TimeoutError) as e:
                lost = isinstance(e, WorkerLost)  # a worker that died
                hung = not lost  # its attempts in flight may still answer; it gets no new one
                avoid.add(node.id)
                await self.lost(node, hung)
                await self._abandon(trial, attempt)
                what = f"was lost: {e}" if lost else f"did not answer in {limit:.0f} s: {type(e).__name__}"
                return closed_attempt(self.ctx, trial, attempt, trace, reason="interrupted", started=started,
                                      retry_reason=retry_reason, sandbox={"node_id": node.id},
                                      message=f"the {self.worker_noun} running this attempt {what}")
            return self.receive(trial, attempt, finished, trace)
        finally:
            await self.pool.release(node, lost=lost, hung=hung)

    async def _abandon(self, trial: PlannedTrial, attempt: int) -> None:
        """Close a lost attempt's sessions on the hub; what they kept for it (the gateway's
        recording: a resume counts its spend) goes into its attempt folder."""
        try:
            files = await asyncio.wait_for(self.hub_call("abandon", f"{trial.id}#{attempt}"), STOP_WAIT_S)
        except self.hub_errors:
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
