"""The in-sandbox supervisor: one per bubblewrap sandbox, standard library only.

It runs inside the sandbox's namespaces (started by :mod:`assay.sandbox.bwrap`) and does two
jobs there, so that every exec of one sandbox shares the same filesystem, process and network
state:

* **exec server**: on a unix socket only the harness can reach, it runs each requested
  command as the sandbox's unprivileged identity (host uid switch, then an inner ``bwrap``
  user namespace for the inside uid), with rlimits, a timeout and a process-group kill;
* **harness bridge**: for each harness endpoint it listens on ``127.0.0.1:<port>`` inside the
  sandbox's network namespace and relays each connection to a unix socket that the harness
  owns on the host. Nothing else leaves the sandbox.

Invoked as ``python -I supervisor.py CONFIG_JSON``. Protocol: one JSON line in, one JSON line
out, one connection per exec; a dropped connection kills that exec's process group.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import resource
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


class _Capture(asyncio.Protocol):
    """Keeps the first ``cap`` bytes of a pipe, counts the rest, and says when it hit EOF."""

    def __init__(self, cap: int, loop: asyncio.AbstractEventLoop):
        self.cap, self.kept, self.total = cap, bytearray(), 0
        self.eof = loop.create_future()
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.total += len(data)
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
                    **popen_kwargs: object) -> dict:
    """Run one process tree in its own session, with a timeout and a process-group kill.

    After the leader exits (or on timeout: SIGTERM, a grace period, then SIGKILL) the whole
    group is killed; a child that left the group (``setsid``, double fork) survives, and only
    the pipes it still holds are abandoned after a short wait. Returns plain data.
    """
    loop = asyncio.get_running_loop()
    start = time.monotonic()
    proc = subprocess.Popen(argv, env=env, cwd=cwd, start_new_session=True,
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
        "duration_s": time.monotonic() - start,
    }


class Supervisor:
    def __init__(self, config: dict):
        self.config = config

    def _argv(self, req: dict) -> list[str]:
        inner = self.config.get("inner_bwrap")
        if not inner:
            return list(req["argv"])
        uid = str(self.config["inside_uid"])
        return [inner, "--bind", "/", "/", "--dev", "/dev", "--unshare-user", "--uid", uid, "--gid", uid,
                "--die-with-parent", "--chdir", req.get("cwd") or "/", "--", *req["argv"]]

    def _preexec(self, rlimits: dict[str, list[int]]):
        def apply() -> None:
            for name, (soft, hard) in rlimits.items():
                resource.setrlimit(getattr(resource, name), (soft, hard))
        return apply

    async def run(self, req: dict, conn_reader: asyncio.StreamReader) -> dict:
        kwargs: dict = {"preexec_fn": self._preexec(req.get("rlimits") or {})}
        host_uid = self.config.get("host_uid")
        if host_uid is not None:
            kwargs.update(user=host_uid, group=host_uid, extra_groups=[])
        hangup = asyncio.ensure_future(conn_reader.read(1))  # the harness went away: kill the exec
        try:
            res = await run_child(self._argv(req), env=req.get("env") or {}, cwd=req.get("cwd") or "/",
                                  timeout=req.get("timeout"), cap=int(req.get("cap", 4 << 20)),
                                  stdin=base64.b64decode(req["stdin"]) if req.get("stdin") is not None else None,
                                  hangup=hangup, **kwargs)
        except OSError as e:
            return {"error": f"cannot start {req['argv'][:1]}: {e}", "exit_code": 127, "duration_s": 0.0}
        finally:
            hangup.cancel()
        res["stdout"] = base64.b64encode(res["stdout"]).decode()
        res["stderr"] = base64.b64encode(res["stderr"]).decode()
        return res

    async def handle_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            if not line:
                return
            req = json.loads(line)
            if req.get("op") == "ping":
                reply = {"ok": True, "pid": os.getpid()}
            else:
                reply = await self.run(req, reader)
            writer.write(json.dumps(reply).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, OSError, ValueError) as e:
            print(f"supervisor: control error: {e}", file=sys.stderr, flush=True)
        finally:
            writer.close()

    async def serve(self) -> None:
        servers = []
        for fw in self.config.get("forwards", []):
            servers.append(await asyncio.start_server(forwarder(fw["sock"]), "127.0.0.1", int(fw["port"])))
        control = self.config["control"]
        servers.append(await asyncio.start_unix_server(self.handle_control, path=control))
        os.chmod(control, 0o600)
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
    asyncio.run(Supervisor(config).serve())


if __name__ == "__main__":
    main()
