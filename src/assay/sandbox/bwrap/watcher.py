"""Bounds on a sandbox as a whole, and its CPU accounting.

A task's :class:`~assay.spec.budget.Limits` bound all of a sandbox's processes together, not
each one: memory (resident pages plus what its tmpfs holds), processes, CPU seconds and disk
written (its ``/tmp`` tmpfs and the workspace's growth). The kernel enforces what it can
through the sandbox's control group (:mod:`assay.sandbox.bwrap.cgroup`); this watcher polls what
the kernel does not bound (CPU seconds in total, workspace growth) and, without a control
group, everything, over the sandbox's pid namespace. When a bound is hit it kills every
process of the sandbox except its own machinery and remembers the bound: the exec in flight
ends with ``resource_limit`` set, and the attempt fails with that reason.

:func:`mechanisms` says which mechanism enforces each bound; the backend records it in the
manifest and ``assay doctor`` prints it (one function, one truth).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from assay.sandbox import nsproc
from assay.sandbox.bwrap.cgroup import Layout, SandboxGroup
from assay.spec.budget import Limits
from assay.untrusted.tree import walk_untrusted

BOUNDS = ("memory", "pids", "cpu", "disk", "open_files", "wall_time")
#: seconds between polls (a /proc pass without a control group; a few small reads with one)
POLL_S = 0.1
#: the workspace walk is re-done at most this often, and never more than 1/20 of the time
WORKSPACE_POLL_S = 0.25
#: a settle whose last workspace walk took less than this runs without a thread hop
INLINE_WALK_S = 0.002
_MIB = 1 << 20
#: what :func:`_tree_bytes` says of a workspace it cannot measure: over any disk bound
UNMEASURABLE = 1 << 62


def mechanisms(limits: Limits, lay: Layout | None, *, root_mode: bool) -> dict[str, str]:
    """Which mechanism bounds each resource of a sandbox here (``unbounded`` if the limit is unset)."""
    cg = f"cgroup v{lay.version}" if lay is not None else None
    nproc = "RLIMIT_NPROC per sandbox host uid" if root_mode else "RLIMIT_NPROC per process"
    table = {
        "memory": (f"{cg} memory limit (resident + tmpfs pages, all processes)" if cg else
                   "pid-namespace watcher (resident + tmpfs, polled)") + "; RLIMIT_AS per process",
        "pids": f"{cg} pids.max (nested pid namespaces included)" if cg else f"pid-namespace watcher (polled); {nproc}",
        "cpu": (f"watcher over {cg} CPU usage (all processes)" if cg else "pid-namespace watcher over /proc (polled)")
               + "; RLIMIT_CPU per process",
        "disk": "tmpfs size (/tmp) + watcher over workspace growth (polled); RLIMIT_FSIZE per file",
        "cpus": f"{cg} CPU quota (cpu.max / cfs_quota_us, all processes)" if cg else "refused: no cgroup here",
        "open_files": "RLIMIT_NOFILE per process (the sandbox: at most processes x open_files)",
        "wall_time": "exec timeout (process group killed, then the namespace at destroy)",
    }
    set_ = {"memory": limits.memory_mb, "pids": limits.processes, "cpu": limits.cpu_time_s,
            "disk": limits.disk_mb, "cpus": limits.cpus, "open_files": limits.open_files, "wall_time": True}
    return {k: (v if set_[k] else "unbounded") for k, v in table.items() if k != "cpus" or limits.cpus}


@dataclass(frozen=True)
class Usage:
    """What a sandbox has used so far; counters only grow."""

    cpu_s: float = 0.0
    oom_kills: int = 0
    pids_refused: int = 0


def _tree_bytes(root: Path) -> int:
    """Bytes allocated under ``root`` (never following a link the agent made). Anything the walk
    cannot measure (past PATH_MAX, too deep, unlistable: where an agent would hide data from a
    name-based walk) counts as unbounded, so it hits the disk bound: unknown is failure."""
    total = 0
    for _, _, st in walk_untrusted(root, max_entries=None, deadline_s=None):
        if st is None:
            return UNMEASURABLE
        total += st.st_blocks * 512
    return total


class Watcher:
    """Polls one sandbox's usage against its limits and ends it at the first bound hit."""

    def __init__(self, limits: Limits, group: SandboxGroup | None, workspace: Path) -> None:
        self.limits, self.group, self.workspace = limits, group, workspace
        self.pidns: str | None = None
        self.exempt: set[int] = set()  # the sandbox's own machinery: bwrap, its init, the holder
        self.tmpfs: list[Path] = []  # host paths of its tmpfs mounts (via /proc/<init>/root)
        self.shm: list[Path] = []  # its /dev/shm, counted as memory
        self.tripped: str | None = None
        self.last = Usage()  # usage at the last poll
        t0 = time.monotonic()
        self.base_workspace = _tree_bytes(workspace)
        self._ws_checked, self._ws_cost = 0.0, time.monotonic() - t0
        self._seen: dict[int, float] = {}  # pid -> last own CPU seen, to keep CPU of the dead
        self._gone_cpu = 0.0
        self._cpu_max = 0.0
        self._task: asyncio.Task[None] | None = None
        self._lock = threading.Lock()  # the poll thread and an exec's own check never interleave
        self._polls_ended = False  # set under the lock by :meth:`stop`: no poll starts after it

    def start(self, pidns: str, init_pid: int, exempt: set[int]) -> None:
        self.pidns = pidns
        self.exempt.update(exempt)  # in place: the launcher queue adds and removes its own
        self.tmpfs = [Path(f"/proc/{init_pid}/root/tmp")]
        self.shm = [Path(f"/proc/{init_pid}/root/dev/shm")]  # memory, never disk
        self._task = asyncio.ensure_future(self._loop())

    async def stop(self) -> None:
        """End the polling, and return only once no poll reads the sandbox any more. Cancelling
        the loop does not stop a poll already handed to a thread: its workspace walk would go on
        holding directories of the workspace open, and the next step's unmount of that workspace
        (a remount for another uid, the verifier's stacked view) would fail with EBUSY."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - a dying poll changes nothing
                pass
            self._task = None
            await asyncio.to_thread(self._end_polls)

    def _end_polls(self) -> None:
        """Wait for a poll in flight (it holds the lock) and refuse every later one."""
        with self._lock:
            self._polls_ended = True

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(POLL_S)
            await asyncio.to_thread(self.check, poll=True)

    # ------------------------------------------------------------------ reading
    def processes(self) -> list[nsproc.ProcInfo]:
        if self.pidns is None:
            return []
        return nsproc.scan(self.pidns, self.group.pids() if self.group is not None else None)

    def cpu_s(self) -> float:
        """CPU seconds so far (with a group: one read of the kernel's counter)."""
        if self.group is not None:
            return self.group.cpu_seconds()
        return self.usage().cpu_s

    def usage(self, procs: list[nsproc.ProcInfo] | None = None) -> Usage:
        with self._lock:
            return self._usage(procs)

    def _usage(self, procs: list[nsproc.ProcInfo] | None) -> Usage:
        if self.group is not None:
            return Usage(self.group.cpu_seconds(), self.group.oom_kills(), self.group.pids_refused())
        procs = self.processes() if procs is None else procs
        live = {p.pid: p.cpu_s for p in procs}
        for pid, cpu in self._seen.items():
            if pid not in live:
                self._gone_cpu += cpu
        self._seen = live
        with_children = sum(p.cpu_s + p.child_cpu_s for p in procs)
        self._cpu_max = max(self._cpu_max, with_children, self._gone_cpu + sum(live.values()))
        return Usage(self._cpu_max)

    def tmpfs_bytes(self, shm: bool = False) -> int:
        """Bytes its tmpfs mounts hold (``shm``: /dev/shm's too)."""
        used = 0
        for p in [*self.tmpfs, *(self.shm if shm else [])]:
            try:
                st = os.statvfs(p)
            except OSError:
                continue
            used += (st.f_blocks - st.f_bfree) * st.f_frsize
        return used

    def workspace_growth(self, force: bool = False) -> int | None:
        now = time.monotonic()
        if not force and now - self._ws_checked < max(WORKSPACE_POLL_S, 20 * self._ws_cost):
            return None
        size = _tree_bytes(self.workspace)
        self._ws_cost, self._ws_checked = time.monotonic() - now, now
        return max(0, size - self.base_workspace)

    # ------------------------------------------------------------------ judging
    def _over(self, final: bool = False) -> str | None:
        """The first bound the sandbox is over (None when within all). The group's counters
        start at zero with the sandbox."""
        lim = self.limits
        procs = None if self.group is not None else self.processes()
        use = self.last = self._usage(procs)
        if lim.memory_mb:
            if self.group is not None:
                if use.oom_kills > 0:
                    return "memory"
            elif sum(p.rss_bytes for p in procs or []) + self.tmpfs_bytes(shm=True) > lim.memory_mb * _MIB:
                return "memory"
        if lim.processes:
            if self.group is not None:
                if use.pids_refused > 0:
                    return "pids"
            elif len([p for p in procs or [] if p.pid not in self.exempt and not p.zombie]) >= lim.processes:
                return "pids"
        if lim.cpu_time_s and use.cpu_s > lim.cpu_time_s:
            return "cpu"
        if lim.disk_mb:
            tmp = self.tmpfs_bytes()
            grown = self.workspace_growth(force=final)
            if tmp >= lim.disk_mb * _MIB or (grown is not None and grown + tmp > lim.disk_mb * _MIB):
                return "disk"
        return None

    def check(self, final: bool = False, *, poll: bool = False) -> str | None:
        """Poll once; at the first bound hit, end every process but the sandbox's own. After
        that the attempt is over and the bound is only reported (the harness may still exec
        to collect evidence). ``poll``: the background loop's check, refused once :meth:`stop` ran."""
        with self._lock:
            if self.pidns is None or self.tripped is not None or (poll and self._polls_ended):
                return self.tripped
            hit = self._over(final=final)
            if hit is not None:
                self.tripped = hit
                self.kill_workload()
            return self.tripped

    def cheap(self) -> bool:
        """Whether :meth:`settle` may run on the event loop: the kernel's counters and a
        workspace walk that took under :data:`INLINE_WALK_S` last time."""
        return self.group is not None and self._ws_cost < INLINE_WALK_S

    def settle(self) -> tuple[str | None, Usage]:
        """After an exec: a final check (the whole workspace walked) and the usage it read, in
        one pass over the sandbox's processes."""
        with self._lock:
            fresh = self.pidns is not None and self.tripped is None
        bound = self.check(final=True)
        if fresh and bound is None:
            return bound, self.last
        return bound, self.usage()

    def kill_workload(self) -> None:
        pids = [p.pid for p in self.processes() if p.pid not in self.exempt]
        nsproc.wait_gone(nsproc.kill_all(pids), timeout_s=5.0)
