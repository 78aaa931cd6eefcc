"""``Sandbox.end_processes``: an injected agent kill ends every process the workload started
(a ``setsid`` daemon, a double fork, one in a nested pid namespace) and keeps the sandbox (its
init and relay stay; the next exec runs in it). Hostile, so inside the second wall."""

from __future__ import annotations

from pathlib import Path

import pytest

from .walled import run_walled


#: three ways out of the exec's process group, each appending to the workspace until killed
ESCAPES = ("(setsid sh -c 'while :; do echo a >> /workspace/a.log; sleep 0.01; done' &); "
           "(sh -c '(setsid sh -c \"while :; do echo b >> /workspace/b.log; sleep 0.01; done\" &)' &); "
           "(setsid unshare --pid --fork --user --map-root-user sh -c "
           "'while :; do echo c >> /workspace/c.log; sleep 0.01; done' &); "
           "until [ -s /workspace/a.log ] && [ -s /workspace/b.log ] && [ -s /workspace/c.log ]; do :; done; echo up")


@pytest.mark.usefixtures("bwrap_backend")
def test_every_escaped_process_dies_and_the_sandbox_stays(tmp_path: Path) -> None:
    ans = run_walled(f"""
        async def main():
            sb, res, _ = await sandboxed({ESCAPES!r}, workspace={str(tmp_path)!r}, destroy=False)
            ended = await sb.end_processes()
            sizes = {{n: (Path({str(tmp_path)!r}) / n).stat().st_size for n in ("a.log", "b.log", "c.log")}}
            after = await sb.exec(["/bin/sh", "-c", "ps -eo pid,comm 2>/dev/null || ls /proc | grep -c '^[0-9]'"],
                                  timeout_s=20)
            again = {{n: (Path({str(tmp_path)!r}) / n).stat().st_size for n in sizes}}
            rep = await sb.destroy()
            answer({{"up": res.stdout.decode(), "ended": list(ended.leftover_commands),
                     "nested": len(ended.leftover_nested), "exec_ok": after.exit_code == 0,
                     "grew": [n for n in sizes if again[n] != sizes[n]], "left_at_destroy": list(rep.leftover_pids)}})
        asyncio.run(main())
    """)
    assert ans["up"].strip() == "up", ans
    cmds = " ".join(ans["ended"])
    assert all(f"/workspace/{n}.log" in cmds for n in "abc"), ans  # each daemon was found and killed
    assert ans["nested"] >= 1, ans
    assert ans["exec_ok"], ans  # the sandbox is still there for the restarted agent
    assert ans["grew"] == [], ans  # nothing wrote after the kill (an exec ran in between)
    assert ans["left_at_destroy"] == [], ans  # nothing was left for teardown to find


@pytest.mark.usefixtures("bwrap_backend")
def test_an_empty_workload_ends_with_nothing_to_report(tmp_path: Path) -> None:
    ans = run_walled(f"""
        async def main():
            sb, res, _ = await sandboxed("true", workspace={str(tmp_path)!r}, destroy=False)
            ended = await sb.end_processes()
            after = await sb.exec(["/bin/true"], timeout_s=20)
            await sb.destroy()
            answer({{"ended": list(ended.leftover_pids), "exec_ok": after.exit_code == 0}})
        asyncio.run(main())
    """)
    assert ans == {"ended": [], "exec_ok": True}


def test_the_host_backend_ends_a_daemon_by_its_token_and_stays_usable(tmp_path: Path) -> None:
    """No isolation: the agent's processes are found by the sandbox's environment token."""
    ans = run_walled(f"""
        from assay.sandbox.host import HostBackend

        async def main():
            ws = Path({str(tmp_path)!r})
            sb = await HostBackend().create(SandboxSpec(workspace=ws))
            res = await sb.exec(["/bin/sh", "-c", "(setsid sh -c 'while :; do echo a >> d.log; sleep 0.01; done' &); "
                                 "until [ -s d.log ]; do :; done; echo up"], timeout_s=30)
            ended = await sb.end_processes()
            size = (ws / "d.log").stat().st_size
            after = await sb.exec(["/bin/true"], timeout_s=20)
            rep = await sb.destroy()
            answer({{"up": res.stdout.decode().strip(), "ended": list(ended.leftover_commands),
                     "grew": (ws / "d.log").stat().st_size != size, "exec_ok": after.exit_code == 0,
                     "left_at_destroy": list(rep.leftover_pids)}})
        asyncio.run(main())
    """)
    assert ans["up"] == "up" and any("d.log" in c for c in ans["ended"]), ans
    assert ans["exec_ok"] and not ans["grew"] and ans["left_at_destroy"] == [], ans
