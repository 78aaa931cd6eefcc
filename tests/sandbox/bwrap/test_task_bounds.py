"""The task-level bounds through a real sandbox, each inside a second wall
(:mod:`tests.sandbox.walled`): ``limits.cpus`` throttles (the kernel's own CPU figures say so),
``storage_mb`` stops a writer, ``/dev/shm`` is writable, bounded and counted as memory, and the
workspace is seen at the spec's ``workdir``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandbox.walled import run_walled

pytestmark = pytest.mark.usefixtures("bwrap_backend")

SPIN = "for i in 1 2; do timeout 2 sh -c 'while :; do :; done' & done; wait"

CPU_SCENARIO = """
async def main():
    out = {{}}
    for name, cpus in (("bounded", {cpus!r}), ("free", None)):
        sb = await BwrapBackend().create(SandboxSpec(workspace=Path({ws!r}), network=NetworkProfile.none,
                                                     limits=Limits(cpus=cpus, cpu_time_s=None)))
        res = await sb.exec(["/bin/sh", "-c", {script!r}], timeout_s=60)
        periods, held = sb.group.throttled()
        out[name] = {{"cpu_s": res.cpu_s, "wall_s": res.duration_s, "periods": periods, "held_s": held,
                     "bounds": sb.describe()["bounds"], "exit": res.exit_code}}
        await sb.destroy()
    answer(out)
asyncio.run(main())
"""


def test_cpus_bound_throttles_two_spinners(tmp_path: Path) -> None:
    from assay.sandbox.bwrap.cgroup import bounds_cpus, layout

    if not bounds_cpus(layout()):
        pytest.skip("no cgroup cpu controller is delegated here")
    ans = run_walled(CPU_SCENARIO.format(ws=str(tmp_path), cpus=0.25, script=SPIN))
    b, free = ans["bounded"], ans["free"]
    assert b["periods"] > 0 and b["held_s"] > 0, ans  # the kernel held the group back
    assert free["periods"] == 0, ans
    # a quota of 0.25 CPUs: at most a quarter of each period's CPU time, whatever else the machine runs
    assert b["cpu_s"] <= 0.25 * b["wall_s"] * 1.3 + 0.05, ans
    assert "CPU quota" in b["bounds"]["cpus"] and "cpus" not in free["bounds"], ans


def test_cpus_bound_without_a_cpu_controller_is_refused(tmp_path: Path) -> None:
    code = f"""
async def main():
    from assay.errors import SandboxError
    try:
        sb = await BwrapBackend().create(SandboxSpec(workspace=Path({str(tmp_path)!r}), network=NetworkProfile.none,
                                                     limits=Limits(cpus=0.5)))
    except SandboxError as e:
        answer({{"refused": str(e), "reason": e.reason}})
    else:
        await sb.destroy()
        answer({{"refused": None}})
asyncio.run(main())
"""
    ans = run_walled(code, env={"ASSAY_SANDBOX_CGROUPS": "0"})
    assert ans["refused"] and "limits.cpus" in ans["refused"] and ans["reason"] == "sandbox_unavailable", ans


SHM_SCENARIO = """
async def main():
    sb = await BwrapBackend().create(SandboxSpec(workspace=Path({ws!r}), network=NetworkProfile.none,
                                                 limits=Limits(**{limits!r}), workdir={workdir!r}))
    res = await sb.exec(["/bin/sh", "-c", {script!r}], timeout_s=60)
    await sb.destroy()
    answer({{"result": result_dict(res), "bound": res.resource_limit, "where": sb.workspace_path}})
asyncio.run(main())
"""


def _shm(tmp_path: Path, script: str, limits: dict, env: dict | None = None, workdir: str = "/workspace") -> dict:
    return run_walled(SHM_SCENARIO.format(ws=str(tmp_path), limits=limits, script=script, workdir=workdir), env=env)


def test_multiprocessing_pool_works_in_the_sandbox(tmp_path: Path) -> None:
    script = ("python3 -c 'import multiprocessing as mp\nwith mp.Pool(2) as p: print(sum(p.map(abs, [-1, -2])))'"
              " && df -k /dev/shm | tail -1")
    ans = _shm(tmp_path, script, {"memory_mb": 512})
    out = ans["result"]["stdout"].splitlines()
    assert ans["result"]["exit_code"] == 0 and out[0] == "3", ans
    assert out[1].split()[1] == str(256 * 1024), ans  # half the memory bound


def test_shm_is_bounded_by_its_size(tmp_path: Path) -> None:
    ans = _shm(tmp_path, "head -c 100000000 /dev/zero > /dev/shm/fill; echo rc=$?; du -k /dev/shm/fill",
               {"memory_mb": 128})
    out = ans["result"]["stdout"]
    assert "rc=1" in out and int(out.split()[-2]) <= 64 * 1024, ans
    assert "No space left" in ans["result"]["stderr"], ans


@pytest.mark.parametrize("mode", ["cgroup", "watcher"])
def test_shm_pages_count_in_the_memory_bound(tmp_path: Path, mode: str) -> None:
    """60 MB held in memory plus 60 MB in /dev/shm (each within its own size) is over a 96 MB bound."""
    from assay.sandbox.bwrap.cgroup import layout

    if mode == "cgroup" and layout() is None:
        pytest.skip("no control groups here")
    hog = ("head -c 45000000 /dev/urandom > /dev/shm/fill && python3 -c 'import time; b = bytearray(60 << 20); "
           "b[::4096] = b\"x\" * len(b[::4096]); print(\"held\", flush=True); time.sleep(30)'")
    ans = _shm(tmp_path, hog, {"memory_mb": 96}, env={"ASSAY_SANDBOX_CGROUPS": "0"} if mode == "watcher" else None)
    assert ans["bound"] == "memory", ans


def test_storage_mb_stops_a_workspace_writer(tmp_path: Path) -> None:
    from assay.spec.budget import Limits

    assert Limits(storage_mb=32).disk_mb == 32
    ans = _shm(tmp_path, "while :; do head -c 1000000 /dev/zero >> fill; done", {"storage_mb": 32})
    assert ans["bound"] == "disk" and not ans["result"]["timed_out"], ans


def test_workspace_is_seen_at_the_workdir(tmp_path: Path) -> None:
    (tmp_path / "given.txt").write_text("fixture\n")
    ans = _shm(tmp_path, "pwd; cat /home/user/given.txt; echo made > /home/user/new.txt", {}, workdir="/home/user")
    assert ans["where"] == "/home/user" and ans["result"]["stdout"] == "/home/user\nfixture\n", ans
    assert (tmp_path / "new.txt").read_text() == "made\n"


def test_workdir_over_the_python_install_is_refused(tmp_path: Path) -> None:
    import sys

    code = f"""
async def main():
    from assay.errors import SandboxError
    try:
        sb = await BwrapBackend().create(SandboxSpec(workspace=Path({str(tmp_path)!r}), network=NetworkProfile.none,
                                                     workdir={str(Path(sys.prefix).resolve())!r}))
    except SandboxError as e:
        answer({{"refused": str(e)}})
    else:
        await sb.destroy()
        answer({{"refused": None}})
asyncio.run(main())
"""
    ans = run_walled(code)
    assert ans["refused"] and "collides" in ans["refused"], ans
