"""How one exec enters a live bubblewrap sandbox, no interpreter inside.

The sandbox's long-lived ``bwrap`` holds the namespaces with a process that does nothing,
ready as soon as bwrap is. Each exec is a launcher the harness parked ahead
(:mod:`assay.sandbox.bwrap.launch`): already in the sandbox's control group and given the rlimits
before it runs anything, so everything it starts is bounded from its first instruction. An
:class:`Entry` says where it goes: it enters the sandbox's mount, pid, net, ipc, uts and cgroup
namespaces and its root, and runs the command as the sandbox's identity:

* harness is root: as the sandbox's own unprivileged host uid, in a fresh user namespace
  mapping it to the inside uid, no capability left;
* harness is a normal user: it enters the sandbox's user namespace as itself, then a fresh one
  mapping it to the inside uid.

The compiled launcher does it in one program (:mod:`assay.sandbox.bwrap.native`); the fallback is
util-linux ``nsenter`` then ``unshare --map-user`` (:func:`argv`). The process group, timeout
and output capture are :func:`assay.sandbox.supervisor.run_child`, the same as the host
backend's.
"""

from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

NS_GET_PARENT = 0xB702  # ioctl on a namespace fd: its parent (linux/nsfs.h)


@functools.lru_cache(maxsize=1)
def tools() -> tuple[str, str] | None:
    """(nsenter, unshare) of util-linux when both are here and nsenter knows ``--wdns``."""
    nsenter, unshare = shutil.which("nsenter"), shutil.which("unshare")
    if nsenter is None or unshare is None:
        return None
    try:
        out = subprocess.run([nsenter, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return (nsenter, unshare) if "--wdns" in out.stdout else None


def owning_userns(init_pid: int) -> int:
    """An fd of the user namespace owning the sandbox's other namespaces (unprivileged bwrap
    runs its init in a nested one, from which they cannot be entered): the parent of init's."""
    fd = os.open(f"/proc/{init_pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    try:
        return fcntl.ioctl(fd, NS_GET_PARENT)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Entry:
    """How an exec enters one sandbox: its init's namespaces and root, the directory inside,
    the host uid to become (root harness) or the user namespace to enter (normal user), and
    the uid inside."""

    init_pid: int
    cwd: str
    host_uid: int | None
    inside_uid: int
    userns: str | None  # a path to the sandbox's user namespace (the harness's fd), without root
    cgroup: bool  # enter its cgroup namespace (it has one of its own, and we may)


def entry(init_pid: int, *, cwd: str, host_uid: int | None, inside_uid: int, userns_fd: int | None = None) -> Entry:
    """The :class:`Entry` of the sandbox of ``init_pid`` (``userns_fd``, from :func:`owning_userns`,
    held open by the harness when not root; the exec's launcher was started before it existed,
    so it opens it through the harness's fd table: same user, allowed)."""
    return Entry(init_pid, cwd, host_uid, inside_uid,
                 f"/proc/{os.getpid()}/fd/{userns_fd}" if host_uid is None and userns_fd is not None else None,
                 host_uid is not None and _own_cgroup_ns(init_pid))  # a normal user may not enter it: it only hides paths


def argv(e: Entry, command: list[str]) -> list[str]:
    """The exec's argv with util-linux: ``nsenter`` into the sandbox, ``unshare`` to map the uid."""
    found = tools()
    if found is None:
        raise OSError("util-linux nsenter (with --wdns) and unshare are needed to enter a sandbox")
    nsenter, unshare = found
    args = [nsenter, f"--target={e.init_pid}", "--mount", "--pid", "--net", "--ipc", "--uts", "--root",
            f"--wdns={e.cwd}"]
    if e.cgroup:
        args.append("--cgroup")
    if e.host_uid is None:
        args += ([f"--user={e.userns}"] if e.userns else []) + ["--preserve-credentials"]
    else:
        args += [f"--setuid={e.host_uid}", f"--setgid={e.host_uid}"]
    u = str(e.inside_uid)
    return [*args, "--", unshare, f"--map-user={u}", f"--map-group={u}", "--", *command]


def request_fields(e: Entry) -> list[str]:
    """The same entry for the compiled launcher (``launcher.c``'s "enter" fields)."""
    return [str(e.init_pid), e.cwd, "-" if e.host_uid is None else str(e.host_uid), e.userns or "-",
            "1" if e.cgroup else "0", str(e.inside_uid)]


def _own_cgroup_ns(pid: int) -> bool:
    """Whether the sandbox got a cgroup namespace of its own (bwrap only tries)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/cgroup") != os.readlink("/proc/self/ns/cgroup")
    except OSError:
        return False
