"""The in-sandbox endpoint relay, and the process-tree runner every backend shares.

* **harness bridge**: in a bubblewrap sandbox that reaches harness endpoints, this module runs
  inside (started by :mod:`assay.sandbox.bwrap.backend` as what holds the namespaces) and for each
  endpoint listens on ``127.0.0.1:<port>`` in the sandbox's network namespace, relaying each
  connection to a unix socket the harness owns on the host. Nothing else leaves the sandbox.
  Invoked as ``python -I supervisor.py CONFIG_JSON``; prints ``ready`` once it listens.
* :func:`run_child`: one process tree in its own session with a timeout, a process-group kill
  and capped output; the harness runs every exec of a sandbox through it (standard library
  only, so it also works inside).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

KILL_GRACE_S = 2.0
DRAIN_S = 5.0


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def relay(a: tuple[asyncio.StreamReader, asyncio.StreamWriter],
                b: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
    """Copy bytes both ways until both sides are done, then close both."""
    try:
        await asyncio.gather(_pump(a[0], b[1]), _pump(b[0], a[1]))
    finally:
        for w in (a[1], b[1]):
            try:
                w.close()
            except OSError:
                pass


def forwarder(sock_path: str):
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up = await asyncio.open_unix_connection(sock_path)
        except OSError:
            writer.close()
            return
        await relay((reader, writer), up)
    return handle


#: chunks of a pipe whose arrival is timestamped (what a first-output figure needs is the first few)
ARRIVALS = 4096


class _Capture(asyncio.Protocol):
    """Keeps the first ``cap`` bytes of a pipe, counts the rest, and says when it hit EOF; the
    first :data:`ARRIVALS` chunks' arrival (epoch seconds, bytes read by then) are kept, so a
    product's streamed output can be timed by the harness, not by the product."""

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop):
        self.cap, self.kept, self.total = cap, bytearray(), 0
        self.arrivals: list[tuple[float, int]] = []
        self.eof = loop.create_future()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
        if len(self.arrivals) < ARRIVALS:
            self.arrivals.append((time.time(), self.total))
        room = self.cap - len(self.kept)
        if room > 0:
            self.kept.extend(data[:room])

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.eof.done():
            self.eof.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """Whether any process is still in group ``pgid`` (killed ones still dying count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def _capture(pipe, cap: int, loop: asyncio.AbstractEventLoop) -> _Capture:  # noqa: ANN001 - a file object
    _, proto = await loop.connect_read_pipe(lambda: _Capture(cap, loop), pipe)
    return proto


def _feed(pipe, data: bytes) -> None:  # noqa: ANN001 - a file object
    try:
        pipe.write(data)
    except (BrokenPipeError, OSError):
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


async def _exited(pid: int, loop: asyncio.AbstractEventLoop) -> None:
    """Resolves when ``pid`` exits, whoever still holds its pipes (a pidfd, not a pipe EOF)."""
    fd = os.pidfd_open(pid)
    done = loop.create_future()

    def ready() -> None:
        if not done.done():
            done.set_result(None)
    loop.add_reader(fd, ready)
    try:
        await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def run_child(argv: list[str], *, env: dict[str, str], cwd: str | None, timeout: float | None,
                    stdin: bytes | None, cap: int, hangup: "asyncio.Future[object] | None" = None,
                    started: "subprocess.Popen[bytes] | None" = None, **popen_kwargs: object) -> dict:
    """Run one process tree in its own session, with a timeout and a process-group kill.

    After the leader exits (or on timeout: SIGTERM, a grace period, then SIGKILL) the whole
    group is killed; ``group_left`` says some of it was still dying when the leader was reaped
    (a backend that can list them waits for them). A child that left the group (``setsid``, double fork) survives, and only
    the pipes it still holds are abandoned after a short wait. Returns plain data.
    ``started``: the process, already started in a session of its own with stdout and stderr
    piped and stdin piped when ``stdin`` is given (``argv``, ``env``, ``cwd`` are then unused).
    """
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    proc = started if started is not None else subprocess.Popen(
        argv, env=env, cwd=cwd, start_new_session=True,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen_kwargs)  # type: ignore[arg-type]
    pgid = proc.pid
    captures: list[_Capture] = []
    try:
        captures = [await _capture(proc.stdout, cap, loop), await _capture(proc.stderr, cap, loop)]
        if stdin is not None:
            loop.run_in_executor(None, _feed, proc.stdin, stdin)
        waiter = asyncio.ensure_future(_exited(proc.pid, loop))
        watch = {waiter} if hangup is None else {waiter, hangup}
        done, _ = await asyncio.wait(watch, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        timed_out = waiter not in done
        if timed_out:
            _killpg(pgid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(waiter), timeout=KILL_GRACE_S)
            except asyncio.TimeoutError:
                pass
        _killpg(pgid, signal.SIGKILL)
        await waiter
        rc = proc.wait()
        # a child that left the group may still hold the pipes: wait a little, keep what came
        await asyncio.wait([c.eof for c in captures], timeout=DRAIN_S)
        group_left = _group_alive(pgid)  # the leader is reaped: only killed members, still dying
    except BaseException:
        _killpg(pgid, signal.SIGKILL)
        proc.wait()
        raise
    finally:
        for c in captures:
            c.close()
    (out, out_n), (err, err_n) = ((bytes(c.kept), c.total) for c in captures)
    return {
        "exit_code": None if timed_out else rc, "signal": -rc if rc < 0 else None, "timed_out": timed_out,
        "stdout": out, "stderr": err, "stdout_bytes": out_n, "stderr_bytes": err_n,
        "stdout_arrivals": tuple(captures[0].arrivals) if captures else (),
        "duration_s": time.monotonic() - start, "group_left": group_left,
    }


async def serve(config: dict) -> None:
    """Relay each endpoint port inside to its unix socket on the host until told to stop."""
    servers = [await asyncio.start_server(forwarder(fw["sock"]), "127.0.0.1", int(fw["port"]))
               for fw in config.get("forwards", [])]
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for s in servers:
        s.close()


def main() -> None:
    config = json.loads(sys.argv[1])
    asyncio.run(serve(config))


if __name__ == "__main__":
    main()
