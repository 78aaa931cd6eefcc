"""Process faults (docs/recovery.md): the agent killed after a tool call, the sandbox restarted,
an approval answered after the agent that asked has ended; then the agent started again.

The world's dispatcher decides *when* (the Nth matching call or approval request, counted, never
drawn) and records the fault; it then awaits :func:`_Runs.interrupt` here, on the engine's loop,
which cancels the running adapter (its process group is killed by the sandbox's exec), then kills
every other process the agent started in the sandbox (a daemon that left the group included:
:meth:`Sandbox.end_processes`), or for ``sandbox_restart`` destroys the sandbox (processes,
``/tmp``) and builds a new one over the same workspace and home. Only then does the dispatcher
return, and the call's answer is never delivered: the agent that would have read it is gone. The
agent is started again within the same attempt, with the time left of its budget, the worlds and
the approval store still open, so the new run sees what the first one did. Where the adapter can
(:meth:`AgentAdapter.resume_point`), the new run continues the killed run's own session (it sees
the conversation so far, the call whose answer it never read included); otherwise it starts fresh
with the task's prompt. Each restart is recorded on the fault's entry (``restart: resume`` and the
session, or ``restart: fresh`` and why), as a harness ``log`` event, and what the new run is given
as a ``user_message``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import Any, Awaitable, Callable

from assay.agents.base import AgentContext, AgentOutcome, Resume
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
            n += 1
            actx = restarted(env, dataclasses.replace(new_context(), timeout_s=max(0.0, left), agent_run=n), entry)
            if left <= 0:
                return AgentOutcome(exit_code=None, timed_out=True)
    finally:
        for d in dispatchers:
            d.interrupt = None


def restarted(env: Any, actx: AgentContext, entry: dict[str, Any]) -> AgentContext:
    """The restarted run's context: the killed run's session continued where the adapter can
    (``restart: resume``, the session's id, the resume note as the user's message), else the task's
    prompt again (``restart: fresh`` and why); recorded on the fault's entry and in the trace."""
    how = resume_point(env, actx)
    if isinstance(how, Resume):
        actx = dataclasses.replace(actx, resume=how, prompt=how.note)
        entry.update(restart="resume", session=how.session)
    else:
        entry.update(restart="fresh", fresh_because=how)
    entry["run"] = actx.agent_run
    env.trace.emit(Source.harness, EventKind.log, {
        "phase": "agent", "restart": entry["restart"], "run": actx.agent_run, "fault": entry.get("kind"),
        "call_id": entry.get("call_id"), "time_left_s": round(actx.timeout_s, 3),
        **({"session": how.session} if isinstance(how, Resume) else {"fresh_because": how})})
    if env.task.spec.conversation is None:  # a conversation records each turn's user message itself
        env.trace.emit(Source.harness, EventKind.user_message, {"text": actx.prompt, "restart": entry["restart"]})
    return actx


def resume_point(env: Any, actx: AgentContext) -> Resume | str:
    """The adapter's answer (a session to continue, or why not); a failing check is a fresh restart."""
    if env.task.spec.conversation is not None:
        return "a conversation task starts its turns again from the first"
    try:
        return env.agent.resume_point(actx)
    except Exception as e:  # noqa: BLE001 - an adapter's broken check costs the resume, not the attempt
        return f"the session could not be checked: {type(e).__name__}: {e}"
