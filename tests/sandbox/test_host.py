"""The host backend: no isolation, loudly marked, but the same watchdog semantics."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import SandboxError
from assay.sandbox.base import SandboxSpec
from assay.sandbox.host import HostBackend
from assay.sandbox.process import run_process


def test_host_is_marked_unsandboxed() -> None:
    b = HostBackend()
    assert b.status().usable and not b.status().isolated
    assert b.facts()["isolated"] is False and b.facts()["unsandboxed"] is True


async def test_daemon_holding_the_pipes_does_not_hang_the_exec(tmp_path: Path) -> None:
    sb = await HostBackend().create(SandboxSpec(workspace=tmp_path))
    # the daemon reports once it has its own session, so it has certainly escaped the process
    # group the watchdog kills when the shell exits (otherwise the test races that kill)
    script = "(setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' &); while [ ! -s daemon.pid ]; do :; done; echo hi"
    r = await sb.exec(["/bin/sh", "-c", script], timeout_s=60)
    report = await sb.destroy()
    assert r.ok and r.stdout == b"hi\n" and not r.timed_out
    assert any("sleep 300" in c for c in report.leftover_commands)
    assert sb.describe()["isolated"] is False


async def test_run_process_timeout_and_missing_program(tmp_path: Path) -> None:
    r = await run_process(["/bin/sh", "-c", "trap '' TERM; sleep 300"], env={"PATH": "/usr/bin:/bin"},
                          cwd=str(tmp_path), timeout_s=0.5)
    assert r.timed_out and r.exit_code is None
    bad = await run_process(["/no/such/program"], env={}, cwd=str(tmp_path), timeout_s=5)
    assert bad.exit_code == 127 and not bad.ok


async def test_host_refuses_a_missing_workspace(tmp_path: Path) -> None:
    with pytest.raises(SandboxError):
        await HostBackend().create(SandboxSpec(workspace=tmp_path / "nope"))


async def test_stdout_chunks_are_timestamped_as_they_arrive(tmp_path: Path) -> None:
    """What a first-output figure reads: each stdout chunk's arrival (epoch s) and the bytes read
    by then, in order, ending at the whole output, inside the exec's own span."""
    import time

    before = time.time()
    r = await run_process(["/bin/sh", "-c", "echo first; sleep 0.2; echo second"], env={"PATH": "/usr/bin:/bin"},
                          cwd=str(tmp_path), timeout_s=30)
    after = time.time()
    assert r.stdout == b"first\nsecond\n" and r.stdout_arrivals
    times, counts = [t for t, _ in r.stdout_arrivals], [n for _, n in r.stdout_arrivals]
    assert times == sorted(times) and counts == sorted(counts) and counts[-1] == len(r.stdout)
    assert before <= times[0] <= times[-1] <= after
    silent = await run_process(["/bin/true"], env={}, cwd=str(tmp_path), timeout_s=30)
    assert silent.stdout_arrivals == ()
