"""Running one process tree with a watchdog: the piece every backend shares.

The child gets its own session (so its whole process group can be killed), output is read
concurrently with a cap, and on timeout the group gets SIGTERM, then SIGKILL after a grace
period. Processes that escaped the group are found by a per-sandbox token in their
environment (see :func:`find_tagged`).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from assay.sandbox.base import OUTPUT_CAP, ExecResult

TOKEN_VAR = "ASSAY_SANDBOX_TOKEN"
KILL_GRACE_S = 2.0


async def _drain(stream: asyncio.StreamReader | None, cap: int) -> tuple[bytes, int]:
    if stream is None:
        return b"", 0
    kept = bytearray()
    total = 0
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            break
        total += len(chunk)
        room = cap - len(kept)
        if room > 0:
            kept.extend(chunk[:room])
    return bytes(kept), total


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run_process(argv: list[str], *, env: dict[str, str], cwd: str | None, timeout_s: float | None,
                      stdin: bytes | None = None, cap: int = OUTPUT_CAP) -> ExecResult:
    """Run ``argv`` in a new session; kill the whole group on timeout."""
    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, cwd=cwd, start_new_session=True,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    pgid = proc.pid
    if stdin is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        proc.stdin.close()
    readers = asyncio.gather(_drain(proc.stdout, cap), _drain(proc.stderr, cap))
    timed_out = False
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), timeout=timeout_s)
    except asyncio.TimeoutError:
        timed_out = True
        _killpg(pgid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), timeout=KILL_GRACE_S)
        except asyncio.TimeoutError:
            pass
    except asyncio.CancelledError:
        _killpg(pgid, signal.SIGKILL)
        await proc.wait()
        raise
    # whatever is left of the group (children that ignored SIGTERM, or a finished leader's
    # children still holding the pipes) is killed so the readers can finish
    _killpg(pgid, signal.SIGKILL)
    await proc.wait()
    try:
        (out, out_n), (err, err_n) = await asyncio.wait_for(readers, timeout=5)
    except asyncio.TimeoutError:
        # an escaped process (new session) still holds our pipes: stop reading, keep what we have
        readers.cancel()
        out, out_n, err, err_n = b"", 0, b"", 0
    rc = proc.returncode
    sig = -rc if rc is not None and rc < 0 else None
    return ExecResult(
        exit_code=None if timed_out else rc, duration_s=time.monotonic() - start, stdout=out, stderr=err,
        timed_out=timed_out, signal=sig, stdout_bytes=out_n, stderr_bytes=err_n,
    )


def find_tagged(token: str) -> list[tuple[int, str]]:
    """Processes whose environment carries ``TOKEN_VAR=token``: (pid, command line)."""
    needle = f"{TOKEN_VAR}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                cmd = ""
            found.append((int(entry.name), cmd))
    return found


def kill_pids(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
