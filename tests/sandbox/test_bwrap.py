"""The bubblewrap backend's contract: one filesystem across execs, a read-only system, the
workspace as the only writable place, separate identities, mounts, timeouts and cleanup."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from assay.errors import SandboxError
from assay.sandbox.base import Mount, SandboxSpec
from assay.sandbox.bwrap.backend import WORKSPACE, BwrapBackend
from assay.spec.budget import Limits, NetworkProfile


async def test_execs_share_workspace_and_tmp(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    (tmp_path / "given.txt").write_text("from host\n")
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    try:
        assert sb.workspace_path == WORKSPACE
        r1 = await sb.exec(["/bin/sh", "-c", "cat given.txt; pwd; echo made > made.txt; echo t > /tmp/scratch"],
                           timeout_s=30)
        assert r1.ok, r1.stderr
        assert r1.stdout.decode().splitlines() == ["from host", WORKSPACE]
        r2 = await sb.exec(["/bin/sh", "-c", "cat /workspace/made.txt /tmp/scratch"], timeout_s=30, cwd="/tmp")
        assert r2.stdout.decode().split() == ["made", "t"]
    finally:
        assert (await sb.destroy()).clean
    assert (tmp_path / "made.txt").read_text() == "made\n"
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "t\n"


async def test_python_of_the_harness_runs_inside(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.none))
    try:
        r = await sb.exec([sys.executable, "-I", "-c", "import assay, pytest, sys; print(sys.prefix)"], timeout_s=60)
    finally:
        await sb.destroy()
    assert r.ok, r.stderr
    assert r.stdout.decode().strip() == sys.prefix


async def test_agent_and_verifier_are_different_identities(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    ids = {}
    for identity in ("agent", "verifier"):
        ws = tmp_path / identity
        ws.mkdir()
        sb = await bwrap_backend.create(SandboxSpec(workspace=ws, identity=identity))
        try:
            r = await sb.exec(["/bin/sh", "-c", "id -u; touch mine"], timeout_s=30)
            assert r.ok, r.stderr
            ids[identity] = (int(r.stdout.decode()), os.stat(ws / "mine").st_uid)
        finally:
            await sb.destroy()
    assert ids["agent"][0] == 1000 and ids["verifier"][0] == 1001
    assert ids["agent"][1] != ids["verifier"][1]
    if os.geteuid() == 0:  # on the host, neither is root
        assert ids["agent"][1] != 0 and ids["verifier"][1] != 0


async def test_environment_is_an_allowlist(bwrap_backend: BwrapBackend, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_TEST_HOST_CANARY", "canary-env-7f3a")
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, env={"FROM_SPEC": "1"}))
    try:
        r = await sb.exec(["/usr/bin/env"], env={"FROM_EXEC": "2"}, timeout_s=30)
    finally:
        await sb.destroy()
    names = {line.split("=", 1)[0] for line in r.stdout.decode().splitlines()}
    assert "canary-env-7f3a" not in r.stdout.decode()
    assert {"FROM_SPEC", "FROM_EXEC", "PATH", "HOME"} <= names
    assert names <= {"FROM_SPEC", "FROM_EXEC", "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "USER", "PWD", "SHLVL", "_"}


async def test_mounts_appear_at_their_target(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    ro, rw, ws = tmp_path / "ro", tmp_path / "rw", tmp_path / "ws"
    for d in (ro, rw, ws):
        d.mkdir()
    (ro / "config").write_text("cfg")
    spec = SandboxSpec(workspace=ws, mounts=(Mount(ro, "/opt/tool"), Mount(rw, "/assay/home", writable=True)))
    sb = await bwrap_backend.create(spec)
    try:
        assert sb.mount_path(spec.mounts[0]) == "/opt/tool"
        r = await sb.exec(["/bin/sh", "-c", "cat /opt/tool/config; echo h > /assay/home/state; "
                                            "echo x > /opt/tool/config && echo WROTE"], timeout_s=30)
    finally:
        await sb.destroy()
    assert r.stdout.decode().startswith("cfg")
    assert "WROTE" not in r.stdout.decode()
    assert (ro / "config").read_text() == "cfg"
    assert (rw / "state").read_text() == "h\n"


async def test_stdin_and_output_counting(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    try:
        r = await sb.exec(["/bin/cat"], stdin=b"hello sandbox", timeout_s=30)
        big = await sb.exec(["/bin/sh", "-c", "head -c 6000000 /dev/zero"], timeout_s=30)
        bad = await sb.exec(["/nonexistent/program"], timeout_s=30)
    finally:
        await sb.destroy()
    assert r.stdout == b"hello sandbox"
    assert big.stdout_bytes == 6_000_000 and len(big.stdout) == 4 << 20
    assert not bad.ok


async def test_timeout_kills_the_whole_tree(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    try:
        r = await sb.exec(["/bin/sh", "-c", "sleep 300 & sleep 300; echo never"], timeout_s=1)
        after = await sb.exec(["/bin/sh", "-c", "ps -eo comm | grep -c '^sleep$' || true"], timeout_s=30)
    finally:
        report = await sb.destroy()
    assert r.timed_out and r.exit_code is None and not r.ok
    assert after.stdout.decode().strip() == "0"
    assert report.clean


async def test_destroy_is_idempotent_and_final(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    await sb.destroy()
    assert (await sb.destroy()).clean
    with pytest.raises(SandboxError):
        await sb.exec(["/bin/true"], timeout_s=5)


async def test_create_refuses_a_missing_workspace_or_mount(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    with pytest.raises(SandboxError):
        await bwrap_backend.create(SandboxSpec(workspace=tmp_path / "missing"))
    with pytest.raises(SandboxError):
        await bwrap_backend.create(SandboxSpec(workspace=tmp_path, mounts=(Mount(tmp_path / "nope", "/opt/x"),)))


async def test_supervisor_cannot_be_killed_by_the_agent(bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the supervisor runs under another uid only when the harness is root")
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path))
    try:
        # every process it can see but itself: pid 1 (the holder, or bwrap's init) and any other
        r = await sb.exec(["/bin/sh", "-c", "for p in $(ls /proc | grep -E '^[0-9]+$'); do "
                           "[ $p = $$ ] || kill -9 $p; done; echo still"], timeout_s=30)
        again = await sb.exec(["/bin/echo", "alive"], timeout_s=30)
    finally:
        await sb.destroy()
    assert "still" in r.stdout.decode()
    assert again.stdout == b"alive\n"


def test_status_and_facts_say_what_isolates(bwrap_backend: BwrapBackend) -> None:
    st = bwrap_backend.status()
    assert st.usable and st.isolated
    facts = bwrap_backend.facts()
    assert facts["isolated"] is True and facts["bwrap_origin"] in ("system", "wheel")
    assert Path(str(facts["bwrap_path"])).is_file()
    assert "fresh per sandbox" in str(facts["prepared_ahead"])  # the manifest says what is made ahead


def test_limits_default_object_is_applied() -> None:
    from assay.sandbox.limits import limits_exceeded, rlimits_for

    rl = rlimits_for(Limits(cpu_time_s=3, memory_mb=64, processes=10, file_size_mb=1, open_files=32))
    assert rl["RLIMIT_CPU"] == (3, 8) and rl["RLIMIT_NPROC"] == (10, 10)
    assert rl["RLIMIT_AS"] == (64 << 20, 64 << 20)
    assert limits_exceeded(152, None, b"", Limits()) == ("cpu_time",)
    assert limits_exceeded(1, None, b"MemoryError", Limits()) == ("memory",)
    assert limits_exceeded(1, None, b"MemoryError", Limits(memory_mb=None)) == ()
    assert limits_exceeded(0, None, b"all good", Limits()) == ()
