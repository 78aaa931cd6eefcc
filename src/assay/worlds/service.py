"""The world/tool service as the run engine sees it (:class:`assay.harness.services.HarnessService`).

One :class:`~assay.worlds.server.ToolServer` per run; per attempt a :class:`WorldSession`
only when the task declares worlds, approvals, behaviour or canaries.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.approvals.store import APPROVALS_FILE, ApprovalStore
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.harness.wiring import WorldToolContract
from assay.records.manifest import RunManifest
from assay.spec.load import LoadedTask
from assay.worlds.contract import world_tool_contract
from assay.worlds.registry import world_kinds
from assay.worlds.session import WorldSession, approvals_path, uses_worlds

if TYPE_CHECKING:  # the server (uvicorn, starlette) is imported when a task first uses worlds
    from assay.worlds.server import ToolServer


class _Session(WorldSession):
    """A world session that leaves the server's key table when it closes."""

    def __init__(self, service: "WorldService", handle: AttemptHandle, store: ApprovalStore | None):
        assert service.server is not None
        super().__init__(handle, service.server.port, store, world_tool_contract(handle.task.spec),
                         host=service.server.host)
        self._service = service
        service.server.register(self.key, self.dispatcher)

    async def close(self) -> SessionReport:
        try:
            return await super().close()
        finally:
            if self._service.server is not None:
                self._service.server.unregister(self.key)
            if self.store is not None:
                self.store.close()


class WorldService(HarnessService):
    name = "worlds"

    def __init__(self) -> None:
        self.server: ToolServer | None = None
        self._starting = asyncio.Lock()
        #: where the trials' approval stores live when not beside the attempt's own folder: the
        #: run directory, for the Ray executor's hub (so `assay approvals decide` reaches them live)
        self.approvals_root: Path | None = None

    async def start(self) -> None:
        """Nothing until an attempt needs worlds (see :meth:`open`)."""

    async def _ensure_server(self) -> ToolServer:
        async with self._starting:
            if self.server is None:
                from assay.worlds.server import ToolServer

                server = ToolServer()
                await asyncio.to_thread(server.start)
                self.server = server
        return self.server

    async def stop(self) -> None:
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            self.server = None

    def manifest_record(self) -> dict[str, Any]:
        return {"worlds": world_kinds(), "exposures": ["native", "mcp", "shim"]}

    def tool_contract(self, task: LoadedTask) -> WorldToolContract | None:
        return world_tool_contract(task.spec) if uses_worlds(task.spec) else None

    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        spec = handle.task.spec
        if not uses_worlds(spec):
            return None
        await self._ensure_server()
        path = approvals_path(handle) if self.approvals_root is None else (
            self.approvals_root / "trials" / handle.trial_id / APPROVALS_FILE)
        store = ApprovalStore(path) if spec.approvals is not None else None
        return _Session(self, handle, store)


def service_from_manifest(manifest: RunManifest) -> HarnessService | None:
    """The run engine's entry point; the service is cheap when no task uses worlds (it opens
    no session and starts its server only on the first attempt that needs one)."""
    return WorldService()
