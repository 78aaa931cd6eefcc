"""The host backend: no isolation at all, for debugging. Every result it produces is marked
unsandboxed, and the report says so on its first line."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid

from assay.sandbox import nsproc
from assay.sandbox.base import BackendStatus, CleanupReport, ExecResult, Sandbox, SandboxBackend, SandboxSpec
from assay.sandbox.process import TOKEN_VAR, find_tagged, run_process
from assay.spec.budget import Limits

#: bounded rescans for survivors at destroy time
SCAN_ROUNDS = 50

BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def prlimit_prefix(limits: Limits) -> list[str]:
    """argv prefix applying rlimits with util-linux ``prlimit`` (empty if it is not installed)."""
    exe = shutil.which("prlimit")
    if exe is None:
        return []
    args = [exe]
    if limits.cpu_time_s:
        args.append(f"--cpu={limits.cpu_time_s}")
    if (space := limits.address_space_mb or limits.memory_mb):
        args.append(f"--as={space * 1024 * 1024}")
    if limits.file_size_mb:
        args.append(f"--fsize={limits.file_size_mb * 1024 * 1024}")
    if limits.open_files:
        args.append(f"--nofile={limits.open_files}")
    return [*args, "--"]


class HostSandbox(Sandbox):
    def __init__(self, spec: SandboxSpec):
        self.spec = spec
        self.token = uuid.uuid4().hex
        self._destroyed = False

    @property
    def workspace_path(self) -> str:
        return str(self.spec.workspace)

    def endpoint_url(self, name: str) -> str:
        for ep in self.spec.endpoints:
            if ep.name == name:
                return f"http://{ep.host}:{ep.port}"
        raise KeyError(f"no endpoint {name!r} in this sandbox")

    async def exec(self, argv: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                   timeout_s: float | None = None, stdin: bytes | None = None) -> ExecResult:
        full_env = {**BASE_ENV, "HOME": str(self.spec.workspace), "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
                    **self.spec.env, **(env or {}), TOKEN_VAR: self.token}
        return await run_process([*prlimit_prefix(self.spec.limits), *argv], env=full_env,
                                 cwd=cwd or str(self.spec.workspace), timeout_s=timeout_s, stdin=stdin)

    async def destroy(self) -> CleanupReport:
        """Kill every process carrying this sandbox's token, scanning until two scans in a row find
        none (a process caught mid-``exec`` shows an empty environment for a moment, and a
        survivor may fork while we kill). The killed are waited for through pidfds, not sleeps."""
        report = await asyncio.to_thread(self._sweep)
        self._destroyed = True
        return report

    async def end_processes(self) -> CleanupReport | None:
        """Every process carrying this sandbox's token, killed as :meth:`destroy` does."""
        return await asyncio.to_thread(self._sweep)

    def _sweep(self) -> CleanupReport:
        seen: dict[int, str] = {}
        quiet = 0
        for _ in range(SCAN_ROUNDS):
            left = find_tagged(self.token)
            for pid, cmd in left:
                seen[pid] = cmd or seen.get(pid, "")
            if left:
                quiet = 0
                nsproc.wait_gone(nsproc.kill_all([pid for pid, _ in left]), timeout_s=2.0)
            else:
                quiet += 1
                if quiet >= 2:
                    break
        return CleanupReport(tuple(seen), tuple(seen[p] for p in seen))

    def describe(self) -> dict[str, object]:
        return {"backend": "host", "isolated": False, "unsandboxed": True, "network": "host"}


class HostBackend(SandboxBackend):
    name = "host"
    isolated = False

    def status(self) -> BackendStatus:
        return BackendStatus("host", usable=True, isolated=False, detail="no isolation: debugging only")

    async def create(self, spec: SandboxSpec) -> Sandbox:
        if not spec.workspace.is_dir():
            from assay.errors import SandboxError

            raise SandboxError(f"workspace {spec.workspace} is not a directory", reason="sandbox_workspace")
        return HostSandbox(spec)

    def facts(self) -> dict[str, object]:
        return {"backend": "host", "isolated": False, "unsandboxed": True,
                "warning": "UNSANDBOXED: the agent ran on the host with the harness's own rights"}
