"""The bridge is the sandbox's only way out, and every connection it relays costs the harness's
own process descriptors (the unix side, the upstream side, and the endpoint's side when the
endpoint is in-process). A sandbox may hold 256 processes of 1,024 descriptors each; the harness
holds far fewer. One agent opening thousands of connections must not exhaust the harness that
serves every other trial: the bridge relays a bounded number at once and closes the rest."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assay.sandbox.base import Endpoint
from assay.sandbox.bridge import MAX_LIVE, HostBridge

FLOOD = MAX_LIVE * 4


async def _echo_server() -> tuple[asyncio.AbstractServer, list[int]]:
    seen = [0]

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen[0] += 1
        try:
            while data := await reader.read(1024):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    return server, seen


async def _probe(path: Path) -> tuple[asyncio.StreamWriter, bool]:
    """Connect, send a byte: True when it came back (relayed), False on EOF (refused)."""
    reader, writer = await asyncio.open_unix_connection(str(path))
    writer.write(b"x")
    await writer.drain()
    try:
        return writer, await reader.read(1) == b"x"
    except ConnectionError:
        return writer, False


async def _flood(tmp_path: Path) -> None:
    server, seen = await _echo_server()
    port = server.sockets[0].getsockname()[1]
    bridge = HostBridge((Endpoint("gateway", "127.0.0.1", port),), tmp_path)
    await bridge.start()
    path = bridge.sockets["gateway"]
    try:
        probes = [await _probe(path) for _ in range(FLOOD)]
        relayed = [w for w, ok in probes if ok]
        assert len(relayed) == MAX_LIVE, len(relayed)
        assert seen[0] == MAX_LIVE  # the endpoint never saw the rest
        assert bridge.refused == FLOOD - MAX_LIVE
        assert bridge.live == MAX_LIVE
        for w, _ in probes:  # the agent lets go: the bridge serves again
            w.close()
        for w, _ in probes:
            try:
                await w.wait_closed()
            except ConnectionError:
                pass
        if bridge.relays:  # every client has gone: each relay ends
            await asyncio.wait(set(bridge.relays))
        w, ok = await _probe(path)
        w.close()
        assert ok and bridge.live <= 1
    finally:
        await bridge.close()
        server.close()


def test_a_connection_flood_is_bounded_at_the_bridge(tmp_path: Path) -> None:
    asyncio.run(_flood(tmp_path))
