"""A worker process of ``--executor procs``: a :class:`~assay.run.cluster.worker.NodeWorker` in a
process of its own, reached over one socket (:mod:`assay.run.cluster.wire`).

The head starts it with the ``spawn`` context (a fresh interpreter, nothing of the head's event
loop or threads inherited) and asks it to ``start`` (build the node worker for the campaign:
suite and agents checked as on a Ray node), then to ``run`` attempts, several at once, each
returned as a ``FinishedAttempt``; the attempt's sessions are opened and closed on the head's
hub through the same socket. It leaves Ctrl-C to the head (the head cancels its attempts, so
each sandbox is released the way a local run releases it), and it ends when asked to ``close``
or when the head is gone (its attempts cancelled first).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from assay.run.cluster.wire import Peer
from assay.run.cluster.worker import NodeWorker


class _Worker:
    """What the head may call in this process."""

    def __init__(self) -> None:
        self.peer: Peer | None = None
        self.node: NodeWorker | None = None
        self.done = asyncio.Event()

    async def handle(self, method: str, args: tuple[Any, ...]) -> Any:
        if method == "start":
            manifest_json, services, contracts, node_id, root = args
            assert self.peer is not None
            self.node = NodeWorker(manifest_json, self.peer.call, services, contracts, node_id, root=Path(root))
            return {**self.node.facts(), "pid": os.getpid()}
        if method == "run" and self.node is not None:
            return await self.node.run(*args)
        if method == "close":
            if self.node is not None:
                self.node.close()
            self.done.set()
            return None
        raise ValueError(f"a procs worker has no call {method!r} (or was not started)")


async def _serve(sock: socket.socket) -> None:
    reader, writer = await asyncio.open_connection(sock=sock)
    worker = _Worker()
    worker.peer = peer = Peer(reader, writer, worker.handle)
    serving = asyncio.create_task(peer.serve())
    closing = asyncio.create_task(worker.done.wait())
    await asyncio.wait([serving, closing], return_when=asyncio.FIRST_COMPLETED)
    if not serving.done():  # asked to close: let the answer go out, then end
        await peer.settle()
        await peer.close()
    else:  # the head is gone: its attempts were cancelled by serve(); what they leave goes too
        if worker.node is not None:
            worker.node.close()
    serving.cancel()
    closing.cancel()
    await asyncio.gather(serving, closing, return_exceptions=True)


def _head_decides(signum: int, frame: Any) -> None:
    """Ctrl-C reaches the worker with the head (one process group): the head's to act on."""


def main(conn: Connection) -> None:
    """The process's entry point (the target the head spawns), given its end of the socket."""
    # the head stops the campaign (see the module's docstring); a handler, not SIG_IGN, which every
    # process started from here (sandboxes, agents) would inherit across exec
    signal.signal(signal.SIGINT, _head_decides)
    fd = os.dup(conn.fileno())
    conn.close()
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)  # no sandbox or agent process may hold the head's socket
    asyncio.run(_serve(sock))
