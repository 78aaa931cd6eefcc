"""Calls both ways over one stream socket between the head and a worker process (``--executor procs``).

Either side may call the other's methods by name while it answers calls itself: the head asks
a worker to run an attempt, the worker asks the head's service hub to open and close the
attempt's sessions meanwhile. A frame is an 8-byte length and a pickle of
``("call", id, method, args)``, ``("ok", id, value)``, ``("err", id, exception)`` or
``("cancel", id)``; both ends are harness processes started by the head (nothing an agent wrote
travels here but as bytes inside the records). A caller cancelled sends ``cancel``, so the
callee's task is cancelled too (an attempt's sandbox is released, as locally). When the other
side is gone every call waiting on it raises :class:`PeerLost`.
"""

from __future__ import annotations

import asyncio
import itertools
import pickle
import struct
from typing import Any, Awaitable, Callable

#: answers a call: (method, args) -> its value
Handler = Callable[[str, tuple[Any, ...]], Awaitable[Any]]
_HEADER = struct.Struct("!Q")


class PeerLost(ConnectionError):
    """The process at the other end closed the connection or died."""


def _picklable(exc: BaseException) -> BaseException:
    """``exc`` if it crosses a pickle intact, else a RuntimeError naming it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception that cannot be rebuilt over there
        return RuntimeError(f"{type(exc).__name__}: {exc}")


class Peer:
    """One end of the connection: :meth:`call` the other end; :meth:`serve` answers it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, handler: Handler):
        self.reader, self.writer, self.handler = reader, writer, handler
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._answering: dict[int, asyncio.Task[None]] = {}
        self._drain = asyncio.Lock()
        self.gone: str | None = None  # why the other end is gone, once it is

    async def _send(self, frame: tuple[Any, ...]) -> None:
        data = pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)
        self.writer.write(_HEADER.pack(len(data)) + data)  # one write: frames never interleave
        async with self._drain:
            await self.writer.drain()

    async def call(self, method: str, *args: Any) -> Any:
        """The other end's ``method(*args)``; its exception is raised here, :class:`PeerLost` if it is gone."""
        if self.gone is not None:
            raise PeerLost(self.gone)
        n = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[n] = fut
        try:
            try:
                await self._send(("call", n, method, args))
            except (ConnectionError, OSError) as e:
                raise PeerLost(f"{type(e).__name__}: {e}") from e
            return await fut
        except asyncio.CancelledError:
            if self.gone is None and not self.writer.is_closing():
                data = pickle.dumps(("cancel", n))
                self.writer.write(_HEADER.pack(len(data)) + data)  # no await: we are being cancelled
            raise
        finally:
            self._waiting.pop(n, None)

    async def serve(self) -> None:
        """Read frames until the other end is gone, answering calls and resolving ours; then fail
        what still waits on it and cancel what it asked for."""
        why = "the other end closed the connection"
        try:
            while True:
                size = _HEADER.unpack(await self.reader.readexactly(_HEADER.size))[0]
                self._frame(pickle.loads(await self.reader.readexactly(size)))
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            if not isinstance(e, asyncio.IncompleteReadError):
                why = f"{type(e).__name__}: {e}"
        finally:
            self.lose(why)
            await self.settle()

    def lose(self, why: str) -> None:
        """The other end is gone: every call waiting on it raises :class:`PeerLost` with ``why``."""
        if self.gone is None:
            self.gone = why
        for fut in self._waiting.values():
            if not fut.done():
                fut.set_exception(PeerLost(self.gone))
        for task in self._answering.values():
            task.cancel()

    async def settle(self) -> None:
        """Wait for the calls this end is still answering (cancelled ones clean up first)."""
        await asyncio.gather(*self._answering.values(), return_exceptions=True)

    def _frame(self, frame: tuple[Any, ...]) -> None:
        kind, n = frame[0], frame[1]
        if kind == "call":
            self._answering[n] = asyncio.create_task(self._answer(n, frame[2], frame[3]))
        elif kind == "cancel":
            if (task := self._answering.get(n)) is not None:
                task.cancel()
        elif (fut := self._waiting.get(n)) is not None and not fut.done():
            if kind == "ok":
                fut.set_result(frame[2])
            else:
                fut.set_exception(frame[2])

    async def _answer(self, n: int, method: str, args: tuple[Any, ...]) -> None:
        try:
            try:
                value = await self.handler(method, args)
            except asyncio.CancelledError:
                return  # the caller gave up on it (or is gone): nobody waits for an answer
            except Exception as e:  # noqa: BLE001 - the caller's to raise
                await self._send(("err", n, _picklable(e)))
                return
            await self._send(("ok", n, value))
        except (ConnectionError, OSError):
            pass  # the caller is gone; serve() fails what waits on it
        finally:
            self._answering.pop(n, None)

    async def close(self) -> None:
        """Close this end (the other end's serve() then ends)."""
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
