"""Ending a sandbox's workload without ending the sandbox (an injected agent kill, docs/recovery.md),
and waiting for one exec's killed process group to be gone.

One scan lists what is alive; a process that double-forks between one scan's reads can slip
through it, so the scan is repeated (killing what it finds, waiting on pidfds, never sleeping)
until two scans in a row find nothing, within a bounded number of rounds.
"""

from __future__ import annotations

from typing import Awaitable, Callable, Sequence

from assay.errors import SandboxError
from assay.sandbox import nsproc
from assay.sandbox.base import CleanupReport

#: kill rounds allowed to a workload that keeps starting processes
ROUNDS = 50

#: one scan: (pid, command line, in a nested pid namespace) of what it killed, and their pidfds
Sweep = Callable[[], Awaitable[tuple[list[tuple[int, str, bool]], list[int]]]]


async def kill_until_quiet(sweep: Sweep, rounds: int = ROUNDS) -> CleanupReport:
    """Kill what each scan finds until two scans in a row find nothing; the report lists all of it."""
    seen: dict[int, tuple[str, bool]] = {}
    quiet = 0
    for _ in range(rounds):
        left, fds = await sweep()
        for pid, cmd, nested in left:
            seen.setdefault(pid, (cmd, nested))
        if left and not await nsproc.wait_gone_async(fds):
            raise SandboxError(f"{len(left)} process(es) of the workload did not die", reason="sandbox_workload")
        quiet = 0 if left else quiet + 1
        if quiet == 2:
            return CleanupReport(tuple(seen), tuple(c for c, _ in seen.values()),
                                 tuple(p for p, (_, nested) in seen.items() if nested))
    raise SandboxError(f"the workload kept starting processes through {rounds} kill rounds", reason="sandbox_workload")


#: how long an exec waits for its killed group to finish dying before leaving it to the sweep
GROUP_GONE_S = 10.0


async def group_gone(procs: Sequence[nsproc.ProcInfo], pgid: int) -> bool:
    """Wait for the members of an exec's process group, already sent SIGKILL, to finish dying (a
    large address space takes a while to tear down); killed again through pidfds, so a pid that
    was reused is never signalled. False: some were still there after :data:`GROUP_GONE_S`."""
    fds = nsproc.kill_all([p.pid for p in procs if p.pgrp == pgid and not p.zombie])
    return await nsproc.wait_gone_async(fds, timeout_s=GROUP_GONE_S) if fds else True
