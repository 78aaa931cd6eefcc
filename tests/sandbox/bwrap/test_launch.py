"""Parked launchers and the pool of prepared sandbox parts: a launcher becomes exactly the
command it is given (argv, environment, stdin, exit status), in its control group and with its
rlimits before the command's first instruction, leaks no descriptor, and ends by itself when
it is discarded or when the harness that parked it dies."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.errors import SandboxError
from assay.sandbox.base import Endpoint, Mount, SandboxSpec
from assay.sandbox.bwrap import cgroup, native, pool
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.bwrap.launch import Parked, shield
from assay.spec.budget import NetworkProfile


@pytest.fixture(autouse=True, params=["compiled", "sh"])
def launcher_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with the compiled launcher and with the shell fallback (``/bin/sh``,
    ``nsenter``, ``unshare``): both must keep the same promises."""
    if request.param == "sh":
        monkeypatch.setattr(native, "launcher", lambda: None)
    elif native.launcher() is None:
        pytest.skip("no C compiler here: the compiled launcher is not built")
    return request.param


def _run(parked: Parked, argv: list[str], env: dict[str, str] | None = None, stdin: bytes | None = None,
         ) -> tuple[int, bytes, bytes]:
    proc = parked.release(argv, env or {}, stdin_null=stdin is None)
    out, err = proc.communicate(stdin, timeout=30)
    parked.done()
    return proc.returncode, out, err


def _gone_within(pid_fd: int, seconds: float) -> bool:
    """Whether the process behind ``pid_fd`` exits within ``seconds`` (the kernel wakes us)."""
    try:
        return bool(select.select([pid_fd], [], [], seconds)[0])
    finally:
        os.close(pid_fd)


def test_release_runs_exactly_the_argv_given() -> None:
    words = ["%s|", "it's", "a\nb", "$HOME", "`id`", "--x", "", "ü"]
    code, out, err = _run(Parked(), ["/usr/bin/printf", *words])
    assert code == 0, err
    assert out.decode() == "|".join(words[1:]) + "|"


def test_release_sets_exactly_the_environment_given() -> None:
    env = {"A": "1 2", "B": "q'\"$x\nz", "EMPTY": ""}
    code, out, _ = _run(Parked(), ["/usr/bin/env", "-0"], env)
    got = dict(kv.split("=", 1) for kv in out.decode().split("\0") if kv)
    assert code == 0 and got == env


def test_names_the_shell_cannot_export_still_reach_the_command() -> None:
    code, out, _ = _run(Parked(), ["/usr/bin/env", "-0"], {"A-B": "1", "C": "2"})
    got = dict(kv.split("=", 1) for kv in out.decode().split("\0") if kv)
    assert code == 0 and got == {"A-B": "1", "C": "2"}


def test_stdin_is_the_exec_input_or_nothing() -> None:
    assert _run(Parked(), ["/bin/cat"], stdin=b"line one\nline two\n")[1] == b"line one\nline two\n"
    code, out, _ = _run(Parked(), ["/bin/sh", "-c", "cat; readlink /proc/self/fd/0"])
    assert code == 0 and out == b"/dev/null\n"


def test_exit_status_and_signal_are_the_commands_own() -> None:
    assert _run(Parked(), ["/bin/sh", "-c", "exit 7"])[0] == 7
    assert _run(Parked(), ["/bin/sh", "-c", "kill -9 $$"])[0] == -9


def test_the_command_inherits_no_descriptor_of_the_launcher() -> None:
    code, out, _ = _run(Parked(), ["/bin/sh", "-c", "ls /proc/$$/fd"])
    assert code == 0 and sorted(out.decode().split()) == ["0", "1", "2"]


def test_rlimits_are_set_before_the_command_runs() -> None:
    parked = Parked()
    parked.limit({"RLIMIT_NOFILE": (64, 64), "RLIMIT_FSIZE": (4096, 4096)})
    code, out, _ = _run(parked, ["/bin/sh", "-c", "ulimit -n; ulimit -f"])
    assert code == 0 and out.decode().split() == ["64", "8"]  # -f in 512-byte blocks


def test_a_launcher_runs_once() -> None:
    parked = Parked()
    _run(parked, ["/bin/true"])
    with pytest.raises(OSError):
        parked.release(["/bin/true"], {})


def test_a_discarded_launcher_ends_having_run_nothing() -> None:
    parked = Parked()
    proc = parked.popen
    parked.discard()
    assert proc.returncode == 0 and not parked.alive()


def test_a_launcher_ends_when_the_harness_that_parked_it_dies(tmp_path: Path, launcher_kind: str) -> None:
    env = {**os.environ, "ASSAY_SANDBOX_LAUNCHER": "sh" if launcher_kind == "sh" else ""}
    child = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import os
        from assay.sandbox.bwrap.launch import Parked
        p = Parked()
        print(p.pid, flush=True)
        os._exit(0)  # no cleanup: the script pipe closes with the process
    """)], capture_output=True, text=True, timeout=60, check=True, env=env)
    pid = int(child.stdout.strip())
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    assert _gone_within(fd, 10.0)


@pytest.fixture
def layout() -> cgroup.Layout:
    lay = cgroup.layout()
    if lay is None:
        pytest.skip("this machine delegates no control groups to the harness")
    return lay


def _in_group(cgroup_text: bytes, group: cgroup.SandboxGroup) -> bool:
    """Whether ``/proc/self/cgroup`` as read by a command names ``group`` in every hierarchy."""
    lines = cgroup_text.decode().splitlines()
    return all(any(ctl in ln.split(":")[1].split(",") and ln.endswith("/" + group.name) for ln in lines)
               for ctl in group.layout.parents)


def test_an_attached_launchers_command_is_in_the_group_from_its_start(layout: cgroup.Layout) -> None:
    group = cgroup.SandboxGroup.make(layout, "test")
    try:
        parked = Parked()
        parked.attach(pool.procs_files(group))
        code, out, _ = _run(parked, ["/bin/cat", "/proc/self/cgroup"])
        assert code == 0 and _in_group(out, group), out
    finally:
        assert group.remove()


def test_a_launcher_parked_into_a_group_joins_it_before_running_anything(layout: cgroup.Layout) -> None:
    """The compiled launcher joins the group itself (the harness does not wait for the kernel):
    still before it reads its request, so its command's first instruction is in the group."""
    group = cgroup.SandboxGroup.make(layout, "test")
    try:
        code, out, _ = _run(Parked(group=pool.procs_files(group)), ["/bin/cat", "/proc/self/cgroup"])
        assert code == 0 and _in_group(out, group), out
    finally:
        assert group.remove()


def test_a_launcher_that_cannot_join_its_group_runs_nothing(layout: cgroup.Layout, tmp_path: Path) -> None:
    """A refused attach (here: a group removed under it) ends the launcher before its command:
    the command's marker file is never written."""
    group = cgroup.SandboxGroup.make(layout, "test")
    files = pool.procs_files(group)
    assert group.remove()
    marker = tmp_path / "ran"
    try:
        parked = Parked(group=files)
    except OSError:
        return  # the shell path: the harness's own attach refused, nothing was started
    try:  # it may already have ended: the request then finds no reader
        parked.release(["/bin/sh", "-c", f"echo x > {marker}"], {}, stdin_null=True)
    except BrokenPipeError:
        pass
    code = parked.popen.wait(timeout=30)
    parked.discard()
    assert code == 127 and not marker.exists()


def test_prepared_parts_are_in_a_fresh_group_and_leave_nothing_when_discarded(layout: cgroup.Layout) -> None:
    parts = pool.prepare(layout)
    assert parts.group is not None
    dirs = list(parts.group.dirs.values())
    ours = {parts.holder.pid, *(p.pid for p in parts.launchers)}
    for parked in (parts.holder, *parts.launchers):  # each is in the group before it runs anything
        code, out, _ = _run(parked, ["/bin/cat", "/proc/self/cgroup"])
        assert code == 0 and _in_group(out, parts.group), out
    assert set(parts.group.pids()) <= ours  # nothing else ever joined it
    assert parts.group.cpu_seconds() >= 0 and parts.group.memory_bytes() >= 0
    parts.discard()
    assert not any(d.exists() for d in dirs)
    assert all(not Path(f"/proc/{p}").exists() for p in ours)


async def test_a_destroyed_sandbox_leaves_no_group_state_or_launcher(bwrap_backend: BwrapBackend,
                                                                     tmp_path: Path) -> None:
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.none))
    group, state = sb.group, sb.state
    spares = set(sb.watcher.exempt)
    try:
        r = await sb.exec(["/bin/sh", "-c", "echo hi"], timeout_s=30)
        assert r.ok and r.stdout == b"hi\n", r.stderr
    finally:
        rep = await sb.destroy()
    assert rep.clean and not rep.leftover_pids  # parked launchers are machinery, not leftovers
    pool.flush()
    assert state is None  # no endpoints: no directory at all (errors go to an unnamed file)
    if group is not None:
        assert not any(d.exists() for d in group.dirs.values())
    for pid in spares:  # parked launchers and bwrap: ended and reaped, no child of ours is left
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def _limits_read(group: cgroup.SandboxGroup) -> tuple[int, str]:
    if group.layout.version == 2:
        mem = (group.dirs["all"] / "memory.max").read_text().strip()
        return (-1 if mem == "max" else int(mem)), (group.dirs["all"] / "pids.max").read_text().strip()
    return (int((group.dirs["memory"] / "memory.limit_in_bytes").read_text()),
            (group.dirs["pids"] / "pids.max").read_text().strip())


@pytest.mark.parametrize("want", [(None, None), (2 << 30, 50), (256 << 20, None), (1 << 30, 100)])
def test_limits_set_ahead_are_replaced_by_the_sandboxs_own(layout: cgroup.Layout, want: tuple) -> None:
    """The pool sets the last sandbox's limits on the next group ahead; a sandbox wanting other
    ones (higher, lower, none) gets exactly its own."""
    parts = pool.prepare(layout, (1 << 30, 100))
    try:
        assert parts.group is not None and parts.limits == (1 << 30, 100)
        assert _limits_read(parts.group) == (1 << 30, "100")
        if parts.limits != want:
            parts.group.set_limits(*want, clear=True)
        mem, pids = _limits_read(parts.group)
        assert (mem if want[0] else None) == want[0] and (mem >= 1 << 60 or mem == -1 or want[0])
        assert pids == (str(want[1]) if want[1] else "max")
    finally:
        parts.discard()


async def test_the_sandboxs_machinery_is_shielded_from_the_oom_killer_not_the_workload(
        bwrap_backend: BwrapBackend, tmp_path: Path) -> None:
    probe = subprocess.Popen(["/bin/cat"], stdin=subprocess.PIPE)
    try:
        shield(probe.pid)
        may = Path(f"/proc/{probe.pid}/oom_score_adj").read_text().strip() == "-1000"
    finally:
        probe.communicate(b"")
    if not may:
        pytest.skip("this harness may not lower an OOM score here (not root, or no CAP_SYS_RESOURCE)")
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.none))
    try:
        r = await sb.exec(["/bin/cat", "/proc/self/oom_score_adj"], timeout_s=30)
        machinery = [Path(f"/proc/{p}/oom_score_adj").read_text().strip()
                     for p in (sb.proc.pid, sb.init_pid, sb.supervisor_pid)]
    finally:
        await sb.destroy()
    assert r.ok and r.stdout.strip() == b"0", r
    assert machinery == ["-1000"] * 3


async def test_a_sandbox_with_endpoints_keeps_their_sockets_in_a_directory_removed_after(
        bwrap_backend: BwrapBackend, tmp_path: Path, loopback_server) -> None:  # noqa: ANN001 - a fixture
    ep = Endpoint("svc", "127.0.0.1", loopback_server.port)
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.harness, endpoints=(ep,)))
    state = sb.state
    try:
        assert state is not None and [p.name for p in state.iterdir()] == ["ep0.sock"]
    finally:
        await sb.destroy()
    pool.flush()
    assert not state.exists()


async def test_a_sandbox_that_does_not_start_says_what_bwrap_said(bwrap_backend: BwrapBackend,
                                                                  tmp_path: Path) -> None:
    """bwrap's own error (written to the sandbox's unnamed error file) is the message."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "f").write_text("x")
    spec = SandboxSpec(workspace=tmp_path / "ws", network=NetworkProfile.none,
                       mounts=(Mount(tmp_path / "f", "/usr/assay-no-such-place/f"),))
    with pytest.raises(SandboxError) as err:
        await bwrap_backend.create(spec)
    assert err.value.reason == "sandbox_start" and "bwrap" in str(err.value) and "/usr/assay-no-such-place" in str(err.value)


async def test_a_process_orphaned_inside_is_reaped_not_left_a_zombie(bwrap_backend: BwrapBackend,
                                                                     tmp_path: Path) -> None:
    """Whatever holds the sandbox as its pid 1 (the compiled ``hold`` itself, or bwrap's init
    for ``cat``) reaps a process orphaned inside: once it exits it is gone, not a zombie that
    would count against the sandbox's process bound until the end."""
    sb = await bwrap_backend.create(SandboxSpec(workspace=tmp_path, network=NetworkProfile.none))
    try:
        # the child leaves the exec's process group (which is killed when the exec ends) before
        # the exec ends: it says so with a file once it has its own session
        r = await sb.exec(["/bin/sh", "-c", "mkfifo /tmp/go; setsid /bin/sh -c 'touch /tmp/own; read x < /tmp/go' "
                           "</dev/null >/dev/null 2>&1 & while [ ! -e /tmp/own ]; do :; done; echo $!"],
                          timeout_s=30)
        assert r.ok, r.stderr
        orphan = r.stdout.decode().strip()
        # it outlives its parent (so it is the sandbox's pid 1's child now); told to end, it must
        # vanish: a zombie still answers kill -0 and the loop would run into the timeout
        r = await sb.exec(["/bin/sh", "-c", f"kill -0 {orphan} && echo alive; echo go > /tmp/go; "
                           f"while kill -0 {orphan} 2>/dev/null; do :; done; echo gone"], timeout_s=30)
        assert r.ok and r.stdout.split() == [b"alive", b"gone"], r
    finally:
        await sb.destroy()
