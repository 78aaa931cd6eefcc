"""Finding a sandbox's processes from the host, by pid namespace.

The harness does not ask the sandbox what is still running (the agent could lie); it reads
``/proc`` on the host and takes every process whose pid namespace is the sandbox's, so a
daemonised or double-forked child is found wherever it was reparented.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path


def pid_namespace(pid: int) -> str | None:
    """The pid namespace of ``pid`` (e.g. ``pid:[4026532291]``), or None if it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def processes_in_namespace(pidns: str) -> list[tuple[int, str]]:
    """(host pid, command line) of every live process in ``pidns``; zombies are left out."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != pidns:
                continue
            stat = (entry / "stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        found.append((int(entry.name), cmd))
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
