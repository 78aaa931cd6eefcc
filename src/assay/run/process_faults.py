"""Process faults (docs/recovery.md): the agent killed after a tool call, the sandbox restarted,
an approval answered after the agent that asked has ended; then the agent started again.

The world's dispatcher decides *when* (the Nth matching call or approval request, counted, never
drawn) and records the fault; it then awaits :func:`_Runs.interrupt` here, on the engine's loop,
which cancels the running adapter (its process group is killed by the sandbox's exec), then kills
every other process the agent started in the sandbox (a daemon that left the group included:
:meth:`Sandbox.end_processes`), or for ``sandbox_restart`` destroys the sandbox (processes,
``/tmp``) and builds a new one over the same workspace and home. Only then does the dispatcher return, and the call's answer is never
delivered: the agent that would have read it is gone. The agent is started again within the same
attempt, with the time left of its budget, the worlds and the approval store still open, so the
new run sees what the first one did. Each restart is recorded on the fault's entry
(``restart: fresh``; no adapter declares a resume command yet) and as a harness ``log`` event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Awaitable, Callable

from assay.agents.base import AgentContext, AgentOutcome
from assay.spec.tool_faults import ProcessFaultKind
from assay.trace.events import EventKind, Source
from assay.worlds.faults import FaultingDispatcher

Watchdog = Callable[[Any, AgentContext], Awaitable[AgentOutcome]]
NewContext = Callable[[], AgentContext]


def fault_dispatchers(sessions: list[Any]) -> list[FaultingDispatcher]:
    """The attempt's world dispatchers that carry a process fault plan."""
    out = []
    for sess in sessions:
        d = getattr(sess, "dispatcher", None)
        if isinstance(d, FaultingDispatcher) and d.process_plan:
            out.append(d)
    return out


class _Runs:
    """The agent's runs within one attempt, and the interrupts the worlds ask for."""

    def __init__(self, env: Any, live: Any, loop: asyncio.AbstractEventLoop):
        self.env, self.live, self.loop = env, live, loop
        self.current: asyncio.Task[AgentOutcome] | None = None
        self.pending: list[tuple[dict[str, Any], asyncio.Future[None]]] = []

    async def interrupt(self, entry: dict[str, Any]) -> bool:
        """On the engine's loop: kill the running agent (and the sandbox, for sandbox_restart)."""
        task = self.current
        if task is None or task.done():
            entry["restart"] = None
            return False
        ready: asyncio.Future[None] = self.loop.create_future()
        self.pending.append((entry, ready))
        task.cancel()
        try:
            await asyncio.gather(task, return_exceptions=True)  # the adapter's exec killed its process group
            if entry.get("kind") == ProcessFaultKind.sandbox_restart.value:
                await self._rebuild_sandbox(entry)
            else:
                await self._end_workload(entry)
        except BaseException as e:
            ready.set_exception(e)  # the restart cannot happen: the attempt ends with this error
            raise
        ready.set_result(None)
        return True

    def hook(self, entry: dict[str, Any]) -> Awaitable[bool]:
        """What the dispatcher awaits on the world server's loop."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.interrupt(entry), self.loop))

    async def _end_workload(self, entry: dict[str, Any]) -> None:
        """Every process the agent started in the sandbox, not only its process group: a daemon
        that left the group must not outlive the kill into the restarted run."""
        sb = self.live.sandbox
        report = await sb.end_processes() if sb is not None else None
        if report is None:
            entry["ended_processes"] = None
            entry["kill_scope"] = "process group (this sandbox backend cannot find the agent's other processes)"
            return
        entry["ended_processes"] = len(report.leftover_pids)
        entry["kill_scope"] = "every process of the agent in the sandbox"

    async def _rebuild_sandbox(self, entry: dict[str, Any]) -> None:
        live, env = self.live, self.env
        old, spec = live.sandbox, live.sandbox_spec
        if old is None or spec is None:
            raise RuntimeError("no sandbox to restart")
        live.sandbox = None
        cleanup = await old.destroy()
        entry["leftover_pids"] = entry["ended_processes"] = len(cleanup.leftover_pids)
        entry["kill_scope"] = "the whole sandbox"
        live.sandbox = sb = await env.backend.create(spec)
        live.mounts = {m.target: sb.mount_path(m) for m in spec.mounts}


async def run_with_process_faults(env: Any, live: Any, actx: AgentContext, watchdog: Watchdog,
                                  new_context: NewContext) -> AgentOutcome:
    """Run the agent, starting it again after every process fault, within its wall-time budget."""
    dispatchers = fault_dispatchers(live.sessions)
    if not dispatchers:
        return await watchdog(env, actx)
    runs = _Runs(env, live, asyncio.get_running_loop())
    for d in dispatchers:
        d.interrupt = runs.hook
    deadline = time.monotonic() + actx.timeout_s
    n = 1
    try:
        while True:
            runs.current = asyncio.create_task(watchdog(env, actx))
            try:
                return await asyncio.shield(runs.current)
            except asyncio.CancelledError:
                if not (runs.current.cancelled() and runs.pending):
                    runs.current.cancel()
                    raise  # the attempt itself was cancelled
                entry, ready = runs.pending.pop(0)
            await ready  # the agent is dead (and the sandbox rebuilt) before it starts again
            left = deadline - time.monotonic()
            entry["restart"] = "fresh"
            entry["run"] = n + 1
            env.trace.emit(Source.harness, EventKind.log, {"phase": "agent", "restart": "fresh", "run": n + 1,
                                                          "fault": entry.get("kind"), "call_id": entry.get("call_id"),
                                                          "time_left_s": round(max(0.0, left), 3)})
            if left <= 0:
                return AgentOutcome(exit_code=None, timed_out=True)
            actx = dataclasses.replace(new_context(), timeout_s=left)
            n += 1
    finally:
        for d in dispatchers:
            d.interrupt = None
