"""The command line of a sandbox's long-lived ``bwrap``: its namespaces, its read-only system,
its workspace and private ``/tmp``, the spec's mounts, and what holds it (:mod:`assay.sandbox.bwrap.backend`).
"""

from __future__ import annotations

import os
from pathlib import Path

from assay.errors import SandboxError
from assay.sandbox import image_root
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap import native, rootfs
from assay.sandbox.bwrap.locate import BwrapBinary
from assay.spec.budget import NetworkProfile

WORKSPACE = "/workspace"
STATE = "/.assay"
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
#: what holds the namespaces of a sandbox without endpoints: echoes the harness's "ready", then waits
HOLDER = ["cat"]
#: where the compiled launcher is bound read-only to do the same as the sandbox's pid 1 (a start
#: a fifth of ``cat``'s, and no init of bwrap's beside it)
HOLD_PATH = "/.assay-hold"
#: /dev/shm's size without a memory bound (with one: half of it, as Linux sizes a tmpfs)
SHM_DEFAULT_MB = 512


def image_env(spec: SandboxSpec) -> dict[str, str]:
    """The image's ENV (and its USER's name) for every exec over it."""
    if spec.image is None:
        return {}
    user = {"USER": spec.image.user, "LOGNAME": spec.image.user} if spec.image.user else {}
    return {**dict(spec.image.env), **user}


def shm_bytes(memory_mb: int | None) -> int:
    """The size of a sandbox's writable /dev/shm: its pages count in the memory bound too."""
    return (max(8, memory_mb // 2) if memory_mb else SHM_DEFAULT_MB) << 20


def check_workdir(workdir: str, made: set[str]) -> None:
    """The workdir must not cover, or sit inside, what the read-only system binds (on this host
    the Python install may live under /root or /opt)."""
    for m in made:
        if m == "/":
            continue
        if workdir == m or workdir.startswith(m + "/") or m.startswith(workdir + "/"):
            raise SandboxError(f"workdir {workdir} collides with {m}, which this host's sandbox binds read-only "
                               "(the system or the Python install); choose another workdir", reason="sandbox_workdir")


def workspace_target(spec: SandboxSpec) -> str:
    """Where the workspace appears inside: the task's workdir when it names one, else the image's
    WORKDIR when it names one, else :data:`WORKSPACE`."""
    if spec.workdir != WORKSPACE:
        return spec.workdir
    return spec.image.workdir if spec.image is not None and spec.image.workdir else WORKSPACE


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _harness_roots(binary: BwrapBinary) -> list[str]:
    return [str(p) for p in rootfs.minimal_roots([*rootfs.python_roots(), *binary.support_dirs])]


def hidden_roots(spec: SandboxSpec, binary: BwrapBinary) -> list[str]:
    """The harness's own install roots an image sandbox cannot bind because the task's workdir
    covers them (``WORKDIR /root`` where this host's Python lives under ``/root``): the workspace
    is bound there, and nothing of the harness's is made inside the agent's workspace."""
    if spec.image is None:
        return []
    ws = workspace_target(spec)
    return [r for r in _harness_roots(binary) if _inside(r, ws)]


def needs_hidden(argv: list[str], hidden: list[str]) -> str | None:
    """The hidden root a command's program resolves into on the host (None: it needs none)."""
    if not argv or not hidden:
        return None
    real = os.path.realpath(argv[0]) if os.path.isabs(argv[0]) else argv[0]
    return next((r for r in hidden if _inside(argv[0], r) or _inside(real, r)), None)


def hidden_error(workdir: str, root: str) -> SandboxError:
    return SandboxError(f"workdir {workdir} covers {root}, where this host keeps the harness's own install, and this "
                        "sandbox needs it (an endpoint relay or an agent run by the harness's Python): the task runs "
                        "here for agents that need nothing of the harness's (oracle, nop, the verifier); for others "
                        "install assay outside that folder or choose another workdir", reason="sandbox_workdir")


def refuse_hidden(spec: SandboxSpec, binary: BwrapBinary, argv: list[str]) -> None:
    """Raise :func:`hidden_error` when ``argv`` needs an install root the workdir hid."""
    if spec.image is not None and (root := needs_hidden(argv, hidden_roots(spec, binary))) is not None:
        raise hidden_error(workspace_target(spec), root)


def _image_system(spec: SandboxSpec, binary: BwrapBinary, command: list[str]) -> tuple[list[str], list[str], set[str]]:
    """The read-only root from the task's image, around the harness's own paths (its Python
    install bound at its own path for the machinery only, never on the agent's PATH; a root
    the workdir covers is left out, :func:`hidden_roots`)."""
    assert spec.image is not None
    ws = workspace_target(spec)
    hidden = hidden_roots(spec, binary)
    if (root := needs_hidden(command, hidden)) is not None:
        raise hidden_error(ws, root)
    for m in spec.mounts:
        if _inside(m.target, ws) or _inside(ws, m.target):
            raise SandboxError(f"mount {m.target} and workdir {ws} overlap: the mount would be made inside the "
                               "agent's workspace; choose another workdir", reason="sandbox_workdir")
    py = [r for r in _harness_roots(binary) if r not in hidden]
    keep = (*py, ws, STATE, HOLD_PATH, *(m.target for m in spec.mounts))
    system, made = image_root.image_args(spec.image.rootfs, tuple(keep))
    made = set(made)
    python: list[str] = []
    for root in py:
        python += [*rootfs.parents_args(root, made), "--ro-bind", root, root]
        made.add(root)
    return list(system), python, made


def argv(spec: SandboxSpec, binary: BwrapBinary, *, root_mode: bool, state: Path | None, info_fd: int,
         command: list[str]) -> list[str]:
    """bwrap's argv for the sandbox of ``spec`` running ``command`` (``state``: the endpoints'
    socket directory, bound at :data:`STATE`; bwrap writes its init's pid to ``info_fd``)."""
    if spec.image is not None:
        system, python, made = _image_system(spec, binary, command)
    else:
        system, python, base_made = rootfs.cached_args(binary.support_dirs)
        made = set(base_made)
    workspace = workspace_target(spec)
    args = [str(binary.path), "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox", "--clearenv",
            "--setenv", "PATH", BASE_ENV["PATH"], "--setenv", "LANG", "C.UTF-8", "--info-fd", str(info_fd)]
    if spec.network != NetworkProfile.host:
        args.append("--unshare-net")
    if not root_mode:
        # the user's own uid, unmapped, so no nested user namespace stands between an exec and
        # the sandbox's other namespaces; the holder shares the agent's uid (the agent could
        # end its own attempt, no more)
        args.append("--unshare-user")
    args += system
    args += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    args += ["--size", str(shm_bytes(spec.limits.memory_mb)), "--perms", "1777", "--tmpfs", "/dev/shm"]
    if spec.limits.disk_mb:
        args += ["--size", str(spec.limits.disk_mb << 20)]
    args += ["--perms", "1777", "--tmpfs", "/tmp"]
    args += python
    check_workdir(workspace, made)
    args += [*rootfs.parents_args(workspace, made), "--bind", str(spec.workspace), workspace]
    made.add(workspace)
    for m in spec.mounts:
        if not m.source.exists():
            raise SandboxError(f"mount source {m.source} does not exist", reason="sandbox_mount")
        args += [*rootfs.parents_args(m.target, made), "--bind" if m.writable else "--ro-bind",
                 str(m.source), m.target]
    if state is not None:  # the endpoints' sockets
        args += ["--bind", str(state), STATE]
    if command[0] == HOLD_PATH:  # the holder is the sandbox's pid 1 and reaps orphans: no init of bwrap's
        args += ["--ro-bind", str(native.launcher()), HOLD_PATH, "--as-pid-1"]
    args += ["--chdir", "/", "--", *command]
    return args

