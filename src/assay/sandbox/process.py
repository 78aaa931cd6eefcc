"""Running one process tree with a watchdog: the piece every backend shares.

The child gets its own session (so its whole process group can be killed), output is read
concurrently with a cap, and on timeout the group gets SIGTERM, then SIGKILL after a grace
period (the mechanics live in :func:`assay.sandbox.supervisor.run_child`, which the
bubblewrap supervisor runs inside its sandboxes too). Processes that escaped the group are found by a per-sandbox token in their
environment (see :func:`find_tagged`).
"""

from __future__ import annotations

import errno
from pathlib import Path

from assay.errors import SandboxError
from assay.sandbox.base import OUTPUT_CAP, ExecResult
from assay.sandbox.supervisor import KILL_GRACE_S, run_child

TOKEN_VAR = "ASSAY_SANDBOX_TOKEN"
#: errors of the harness's own resources while it starts a command (its descriptors, memory,
#: processes, disk): the sandbox's failure (infra_error), never an exit of the agent's command
HARNESS_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN, errno.ENOSPC})
__all__ = ["HARNESS_EXHAUSTED", "KILL_GRACE_S", "TOKEN_VAR", "find_tagged", "not_started", "run_process"]


def not_started(e: BaseException, argv: list[str]) -> bytes:
    """The stderr of a command that could not be started (its exit is 127, the command's own), or
    :class:`SandboxError` ``sandbox_exec`` when the harness's own resources ran out: that is the
    host's failure (infra_error), never the agent's. Every backend's exec ends here."""
    if isinstance(e, OSError) and e.errno in HARNESS_EXHAUSTED:
        raise SandboxError(f"the harness could not start {argv[:1]}: {e}", reason="sandbox_exec") from e
    return f"assay: cannot start {argv[:1]}: {e}".encode()


async def run_process(argv: list[str], *, env: dict[str, str], cwd: str | None, timeout_s: float | None,
                      stdin: bytes | None = None, cap: int = OUTPUT_CAP) -> ExecResult:
    """Run ``argv`` in a new session; kill the whole group on timeout and after the leader exits.

    Exit is watched through a pidfd, so a daemonised child that keeps the output pipes open
    cannot make the harness wait beyond a short drain period.
    """
    try:
        r = await run_child(argv, env=env, cwd=cwd, timeout=timeout_s, stdin=stdin, cap=cap)
    except OSError as e:
        return ExecResult(exit_code=127, duration_s=0.0, stderr=not_started(e, argv))
    return ExecResult(
        exit_code=r["exit_code"], duration_s=r["duration_s"], stdout=r["stdout"], stderr=r["stderr"],
        timed_out=r["timed_out"], signal=r["signal"], stdout_bytes=r["stdout_bytes"], stderr_bytes=r["stderr_bytes"],
        stdout_arrivals=r.get("stdout_arrivals", ()),
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
