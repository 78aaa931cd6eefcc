"""The socket between the procs executor's head and a worker: calls both ways at once, the
callee's exception raised at the caller, a cancelled call cancelled at the callee, and every
call waiting on a side that is gone failing with PeerLost."""

from __future__ import annotations

import asyncio
import socket
from typing import Any, AsyncIterator

import pytest

from assay.run.cluster.wire import Handler, Peer, PeerLost


class Unpicklable(Exception):
    def __init__(self, a: str, b: str):  # pickle rebuilds it with one argument: it cannot cross
        super().__init__(f"{a} {b}")


async def pair(head: Handler, worker: Handler) -> tuple[Peer, Peer, list[asyncio.Task[None]]]:
    a, b = socket.socketpair()
    peers = []
    for sock, handler in ((a, head), (b, worker)):
        reader, writer = await asyncio.open_connection(sock=sock)
        peers.append(Peer(reader, writer, handler))
    return peers[0], peers[1], [asyncio.create_task(p.serve()) for p in peers]


@pytest.fixture
async def ends() -> AsyncIterator[dict[str, Any]]:
    state: dict[str, Any] = {"cancelled": asyncio.Event(), "started": asyncio.Event()}

    async def head(method: str, args: tuple[Any, ...]) -> Any:
        if method == "twice":
            return 2 * args[0]
        raise ValueError(f"no {method}")

    async def worker(method: str, args: tuple[Any, ...]) -> Any:
        if method == "run":  # asks the head back while it answers
            return await state["worker"].call("twice", args[0]) + 1
        if method == "block":
            state["started"].set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                state["cancelled"].set()
                raise
        if method == "odd":
            raise Unpicklable("odd", "one")
        raise KeyError(method)

    state["head"], state["worker"], tasks = await pair(head, worker)
    yield state
    for p in (state["head"], state["worker"]):
        await p.close()
    await asyncio.gather(*tasks, return_exceptions=True)


async def test_calls_go_both_ways_and_errors_come_back(ends: dict[str, Any]) -> None:
    head: Peer = ends["head"]
    assert await asyncio.gather(*(head.call("run", n) for n in range(5))) == [2 * n + 1 for n in range(5)]
    with pytest.raises(KeyError, match="nothing"):
        await head.call("nothing")
    with pytest.raises(RuntimeError, match="Unpicklable: odd one"):
        await head.call("odd")
    with pytest.raises(ValueError, match="no open"):
        await ends["worker"].call("open")


async def test_a_cancelled_call_is_cancelled_at_the_callee(ends: dict[str, Any]) -> None:
    call = asyncio.create_task(ends["head"].call("block"))
    await ends["started"].wait()
    call.cancel()
    await ends["cancelled"].wait()  # the worker's task got the cancellation (its sandbox would be released)
    assert await ends["head"].call("run", 1) == 3  # and the connection still serves


async def test_a_side_gone_fails_every_call_waiting_on_it(ends: dict[str, Any]) -> None:
    call = asyncio.create_task(ends["head"].call("block"))
    await ends["started"].wait()
    await ends["worker"].close()  # the worker's end closes (as when its process dies)
    with pytest.raises(PeerLost):
        await call
    with pytest.raises(PeerLost):
        await ends["head"].call("run", 1)
