"""Finding a sandbox's processes from the host, and killing them without pid reuse races.

The harness does not ask the sandbox what is still running (the agent could lie). With a
control group the kernel lists them (:mod:`assay.sandbox.bwrap.cgroup`); without one, one pass over
the host's ``/proc`` takes every process whose pid namespace is the sandbox's *or nested in
it* (a process in a nested namespace descends, by its parent chain, from a member), so a
daemonised, double-forked or ``unshare --pid``-ed child is found wherever it went. Kills go
through a pidfd, so a pid recycled between the scan and the kill is never signalled.
"""

from __future__ import annotations

import os
import select
import signal
import time
from dataclasses import dataclass

_CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcInfo:
    """One process of a sandbox, as the host sees it."""

    pid: int
    ppid: int
    pidns: str
    zombie: bool
    cpu_s: float  # own user + system time
    child_cpu_s: float  # user + system time of children it reaped
    rss_bytes: int
    pgrp: int = 0  # its process group, as the host numbers it


def pid_namespace(pid: int) -> str | None:
    """The pid namespace of ``pid`` (e.g. ``pid:[4026532291]``), or None if it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _info(pid: int, ns: str) -> ProcInfo | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    # fields after the command: state ppid pgrp ... utime(11) stime(12) cutime(13) cstime(14) ... rss(21)
    try:
        return ProcInfo(pid, int(rest[1]), ns, rest[0] == "Z", (int(rest[11]) + int(rest[12])) / _CLK_TCK,
                        (int(rest[13]) + int(rest[14])) / _CLK_TCK, int(rest[21]) * PAGE, int(rest[2]))
    except (IndexError, ValueError):
        return None


def scan(pidns: str, pids: list[int] | None = None) -> list[ProcInfo]:
    """Every process (zombies included) in ``pidns`` or a pid namespace nested in it.

    ``pids``, when given (a control group's list), is taken as the candidates instead of all
    of ``/proc``: membership is then the kernel's word and nothing is filtered out.
    """
    if pids is not None:
        return [i for i in (_info(p, pid_namespace(p) or "") for p in pids) if i is not None]
    table: dict[int, ProcInfo] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        ns = pid_namespace(int(name))
        if ns is None:
            continue
        info = _info(int(name), ns)
        if info is not None:
            table[info.pid] = info
    members: dict[int, bool] = {}

    def member(pid: int, depth: int = 0) -> bool:
        if pid in members:
            return members[pid]
        info = table.get(pid)
        ok = info is not None and depth < 512 and (info.pidns == pidns or (info.ppid > 1 and member(info.ppid, depth + 1)))
        members[pid] = ok
        return ok
    return [info for pid, info in table.items() if member(pid)]


def command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def kill_all(pids: list[int]) -> list[int]:
    """SIGKILL each pid through a pidfd; returns the pidfds (readable once each is gone)."""
    fds = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
        fds.append(fd)
    return fds


def exited(fd: int) -> bool:
    """Whether the process behind pidfd ``fd`` has exited (never blocks)."""
    return bool(select.select([fd], [], [], 0)[0])


def wait_gone(fds: list[int], timeout_s: float = 10.0) -> bool:
    """Wait (no polling loop: the kernel wakes us) until every pidfd says its process exited;
    closes them. True when all are gone within ``timeout_s``."""
    poller = select.poll()
    pending = set(fds)
    for fd in fds:
        poller.register(fd, select.POLLIN)
    end = time.monotonic() + timeout_s
    try:
        while pending:
            left = end - time.monotonic()
            if left <= 0:
                return False
            for fd, _ in poller.poll(left * 1000):
                poller.unregister(fd)
                pending.discard(fd)
        return True
    finally:
        for fd in fds:
            os.close(fd)


async def wait_gone_async(fds: list[int], timeout_s: float = 10.0) -> bool:
    """:func:`wait_gone` for an event loop: each pidfd is watched by the loop, no thread."""
    import asyncio

    loop = asyncio.get_running_loop()
    pending = set(fds)
    done: asyncio.Future[None] = loop.create_future()

    def ready(fd: int) -> None:
        loop.remove_reader(fd)
        pending.discard(fd)
        if not pending and not done.done():
            done.set_result(None)
    for fd in fds:
        loop.add_reader(fd, ready, fd)
    try:
        if pending:
            await asyncio.wait_for(done, timeout=timeout_s)
        return True
    except asyncio.TimeoutError:
        return False
    finally:
        for fd in fds:
            if fd in pending:
                loop.remove_reader(fd)
            os.close(fd)
