"""The host half of the harness bridge: unix sockets the harness owns, each relaying to one
harness endpoint (model gateway, world tools, approvals).

The sandbox's network namespace has only loopback; its supervisor listens on
``127.0.0.1:<port>`` inside and connects to these sockets, which are the sandbox's only way
out. Connections are counted so a test (or the trace) can tell the bridge was used.

Each relayed connection costs the harness's own process two or three descriptors, and a sandbox
may hold hundreds of thousands (its processes times their open files). The bridge therefore
relays at most :data:`MAX_LIVE` connections of one sandbox at once and closes the others as they
arrive (counted in ``refused``): one agent's flood never exhausts the harness serving every trial.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.sandbox.base import Endpoint
from assay.sandbox.supervisor import relay

#: connections of one sandbox relayed at once, all its endpoints together (an agent needs a few)
MAX_LIVE = 128


@dataclass
class HostBridge:
    """One unix-socket relay per endpoint, alive while the sandbox is."""

    endpoints: tuple[Endpoint, ...]
    directory: Path
    sockets: dict[str, Path] = field(default_factory=dict)
    connections: dict[str, int] = field(default_factory=dict)
    live: int = 0  # relayed now
    refused: int = 0  # closed on arrival: MAX_LIVE were live
    _servers: list[asyncio.AbstractServer] = field(default_factory=list)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def start(self) -> None:
        for i, ep in enumerate(self.endpoints):
            path = self.directory / f"ep{i}.sock"
            server = await asyncio.start_unix_server(self._handler(ep), path=str(path))
            os.chmod(path, 0o600)
            self._servers.append(server)
            self.sockets[ep.name] = path
            self.connections[ep.name] = 0

    def _handler(self, ep: Endpoint):  # noqa: ANN202 - an asyncio stream callback
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections[ep.name] += 1
            if self.live >= MAX_LIVE:
                self.refused += 1
                writer.close()
                return
            self.live += 1
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                try:
                    up = await asyncio.open_connection(ep.host, ep.port)
                except OSError:
                    writer.close()
                    return
                await relay((reader, writer), up)
            except asyncio.CancelledError:
                # the bridge is closing under an open stream (an agent holding an MCP event stream);
                # relay() has closed both sides: end quietly instead of asyncio logging the callback
                pass
            finally:
                self.live -= 1
                if task is not None:
                    self._tasks.discard(task)
        return handle

    @property
    def relays(self) -> set[asyncio.Task[None]]:
        """The relays running now (each ends when either side closes)."""
        return set(self._tasks)

    async def close(self) -> None:
        for s in self._servers:
            s.close()
        for t in list(self._tasks):
            t.cancel()
        for s in self._servers:
            try:
                await asyncio.wait_for(s.wait_closed(), timeout=2)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - closing is best effort
                pass
        self._servers.clear()
