"""The sandbox interface: create from a workspace, exec with timeout and limits, destroy.

Backends (host, bubblewrap, later Docker/Kubernetes) are the only code that touches
processes for a trial; everything above them is plain logic. A backend is chosen by name in
the run manifest and recorded there.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import SandboxError
from assay.sandbox.image_root import ImageRoot
from assay.spec.budget import Limits, NetworkProfile

#: bytes of stdout/stderr kept in memory per exec; the rest is counted and dropped.
OUTPUT_CAP = 4 << 20


@dataclass(frozen=True)
class Endpoint:
    """A harness-owned service the sandbox may reach (model gateway, world, approvals)."""

    name: str
    host: str
    port: int
    #: the port it is seen on inside a bridged sandbox (its own network namespace), when fixed:
    #: an address an agent can be told before the run (a web app's); None: the host's port
    inside_port: int | None = None

    @property
    def port_inside(self) -> int:
        return self.port if self.inside_port is None else self.inside_port


@dataclass(frozen=True)
class Mount:
    """An extra host path made visible inside the sandbox (read-only unless ``writable``)."""

    source: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class SandboxSpec:
    """What a sandbox is made of. ``workspace`` is the only writable host path (plus mounts
    explicitly marked writable, e.g. an agent's per-trial home)."""

    workspace: Path
    network: NetworkProfile = NetworkProfile.harness
    limits: Limits = field(default_factory=Limits)
    env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    endpoints: tuple[Endpoint, ...] = ()
    identity: str = "agent"  # "agent" or "verifier": they never share a uid inside
    workdir: str = "/workspace"  # where the workspace is seen inside (an isolated backend binds it there)
    label: str = ""  # trial/attempt label, for leftovers and diagnostics
    #: the task's image as the sandbox's read-only root (None: the host's system, as always)
    image: ImageRoot | None = None

    def __post_init__(self) -> None:
        inside = [ep.port_inside for ep in self.endpoints]
        if len(set(inside)) != len(inside):
            clash = sorted({p for p in inside if inside.count(p) > 1})
            raise SandboxError(f"two harness endpoints would listen on port {clash} inside the sandbox "
                               f"({', '.join(f'{ep.name}:{ep.port_inside}' for ep in self.endpoints)}); give the "
                               "services other ports (ASSAY_GATEWAY_PORT, ASSAY_TOOLS_PORT)",
                               reason="sandbox_config")


@dataclass(frozen=True)
class ExecResult:
    """What one command did inside the sandbox."""

    exit_code: int | None
    duration_s: float
    stdout: bytes = b""
    stderr: bytes = b""
    timed_out: bool = False
    signal: int | None = None
    stdout_bytes: int = 0  # total produced, including what was dropped past OUTPUT_CAP
    stderr_bytes: int = 0
    limits_exceeded: tuple[str, ...] = ()
    #: a bound on the sandbox as a whole ended this exec (or was hit before it): "memory",
    #: "pids", "cpu" or "disk"; the attempt is then a fail with reason ``resource_limit: <bound>``
    resource_limit: str | None = None
    #: CPU seconds all of the sandbox's processes used during this exec (None: not measured)
    cpu_s: float | None = None
    #: when each stdout chunk reached the harness (epoch seconds) and the bytes read by then, for
    #: the first chunks (empty: not timed by this backend); a streamed first token is timed from it
    stdout_arrivals: tuple[tuple[float, int], ...] = ()

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@dataclass(frozen=True)
class CleanupReport:
    """What was still running when the sandbox was destroyed, and was killed; and what the
    sandbox used over its life."""

    leftover_pids: tuple[int, ...] = ()
    leftover_commands: tuple[str, ...] = ()
    #: the leftovers that were in a pid namespace nested inside the sandbox's (``unshare --pid``)
    leftover_nested: tuple[int, ...] = ()
    #: CPU seconds of all the sandbox's processes over its life (None: not measured)
    cpu_s: float | None = None
    #: the first bound on the sandbox as a whole that was hit, if any
    resource_limit: str | None = None

    @property
    def clean(self) -> bool:
        return not self.leftover_pids


@dataclass(frozen=True)
class BackendStatus:
    """What ``assay doctor`` says about a backend."""

    name: str
    usable: bool
    isolated: bool
    detail: str = ""
    facts: dict[str, str] = field(default_factory=dict)


class Sandbox(abc.ABC):
    """One live sandbox over one workspace."""

    spec: SandboxSpec

    @property
    @abc.abstractmethod
    def workspace_path(self) -> str:
        """The workspace's path as processes inside the sandbox see it."""

    @abc.abstractmethod
    def endpoint_url(self, name: str) -> str:
        """Base URL (scheme://host:port) of a harness endpoint as seen from inside."""

    def mount_path(self, mount: Mount) -> str:
        """Where a mount of the spec appears inside the sandbox (the host path, without isolation)."""
        return str(mount.source)

    @abc.abstractmethod
    async def exec(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                   timeout_s: float | None = None, stdin: bytes | None = None) -> ExecResult:
        """Run a command to completion (or timeout, after which its whole process tree is killed)."""

    @abc.abstractmethod
    async def destroy(self) -> CleanupReport:
        """Kill everything still running in the sandbox and release it; idempotent."""

    async def end_processes(self) -> CleanupReport | None:
        """Kill every process the workload started (those that left an exec's process group
        included) and keep the sandbox: its own init and harness services stay. What an injected
        agent kill uses before the agent starts again (docs/recovery.md). The report lists what
        was killed; None: this backend cannot tell the workload's processes apart."""
        return None

    def describe(self) -> dict[str, object]:
        """Facts recorded in the attempt result."""
        return {"backend": type(self).__name__}

    def memory_peak_bytes(self) -> int | None:
        """The high-water mark of all the sandbox's memory since it began or since
        :meth:`reset_memory_peak` (its control group's own figure); None: not measured here."""
        return None

    def reset_memory_peak(self) -> bool:
        """Start the high-water mark again (what a per-turn memory figure needs); False: cannot."""
        return False


class SandboxBackend(abc.ABC):
    """A kind of sandbox. Registered by name in :mod:`assay.sandbox.registry`."""

    name: str = ""
    isolated: bool = False

    @abc.abstractmethod
    def status(self) -> BackendStatus:
        """Whether this backend works on this machine (never raises)."""

    def status_ahead(self) -> None:
        """Begin working out :meth:`status` in the background where that takes time (a real
        sandbox made and destroyed), so a run's checks go on meanwhile. Never raises."""

    @abc.abstractmethod
    async def create(self, spec: SandboxSpec) -> Sandbox:
        """Make a sandbox for ``spec``; raises :class:`assay.errors.SandboxError` if it cannot."""

    def facts(self) -> dict[str, object]:
        """Facts bound into the run manifest (binary path and version, ...)."""
        return {"backend": self.name, "isolated": self.isolated}
