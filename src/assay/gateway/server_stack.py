"""The HTTP server under the gateway's ASGI app, chosen by measurement (bench/gateway.py,
docs/gateway.md): one process, the run's sessions in its memory, so accounting stays exact.

The default is ``uvicorn-httptools``: httptools is a dependency, so it is the same on every
machine. Measured as CPU per request of the gateway's process (bench/gateway.py, which a loaded
machine delays but does not inflate), its C parser costs 20 % less than h11 for JSON answers and
18 % less for streams; uvloop added nothing measurable on top. Granian (embedded mode, which its authors call experimental) had the best streaming
tail under load; ``ASSAY_GATEWAY_SERVER`` picks it or another stack (the stack is recorded in
the manifest): ``uvicorn-h11``, ``uvicorn-httptools``, ``uvicorn-httptools-uvloop``,
``hypercorn``, ``granian``. The extra stacks need their packages installed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Any, Callable

STACKS = ("uvicorn-h11", "uvicorn-httptools", "uvicorn-httptools-uvloop", "hypercorn", "granian")
ENV = "ASSAY_GATEWAY_SERVER"


def default_stack() -> str:
    chosen = os.environ.get(ENV)
    if chosen:
        if chosen not in STACKS:
            raise ValueError(f"{ENV}={chosen!r}: not one of {', '.join(STACKS)}")
        return chosen
    return "uvicorn-httptools"


def loop_factory(stack: str) -> Callable[[], asyncio.AbstractEventLoop]:
    if stack.endswith("uvloop"):
        import uvloop

        return uvloop.new_event_loop
    return asyncio.new_event_loop


async def serve(app: Any, sock: socket.socket, stack: str, stop: asyncio.Event, started: Callable[[], None]) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set; call ``started`` once ready."""
    if stack.startswith("uvicorn"):
        import uvicorn

        config = uvicorn.Config(app, log_level="critical", access_log=False, lifespan="on", timeout_graceful_shutdown=2,
                                timeout_keep_alive=30, http="h11" if stack == "uvicorn-h11" else "httptools")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.wait({task, asyncio.create_task(asyncio.sleep(0.005))}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # raises why it could not start
        started()
        await stop.wait()
        server.should_exit = True
        await task
    elif stack == "hypercorn":
        from hypercorn.asyncio import serve as hserve
        from hypercorn.config import Config

        cfg = Config()
        cfg.bind = [f"fd://{sock.fileno()}"]
        cfg.keep_alive_timeout = 30
        cfg.graceful_timeout = 2
        cfg.loglevel = "CRITICAL"
        logging.getLogger("hypercorn.error").setLevel(logging.CRITICAL)
        started()  # the socket already listens: connections wait in its backlog until served
        await hserve(app, cfg, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
    elif stack == "granian":
        from granian.constants import Interfaces
        from granian.server.embed import Server

        host, port = sock.getsockname()[:2]
        sock.close()  # granian binds the port itself
        server = Server(app, address=host, port=port, interface=Interfaces.ASGI, log_enabled=False)
        task = asyncio.create_task(server.serve())
        started()
        await stop.wait()
        server.stop()
        await task
    else:
        raise ValueError(f"unknown server stack {stack!r} (one of {', '.join(STACKS)})")
