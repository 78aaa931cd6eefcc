"""Per-trial sandbox cost of assay next to the raw floor, measured in the same run.

    .venv/bin/python bench/sandbox.py [--trials 40] [--rounds 5] [--jobs 1 4]

A *one-sandbox* trial: make a workspace, run the agent's command in a sandbox, remove it. A
*two-sandbox* trial also copies the workspace and runs a check in a second sandbox (the
verifier's), then removes both. The **floor** does the same work directly: one plain
``bwrap`` launch per command with the same read-only system binds and namespaces, no
supervisor, no bounds, no bookkeeping. **assay** goes through the bwrap backend (create, exec,
destroy: the parked launchers, the control group or watcher, the leftover scan, CPU
accounting), with the exec launcher it would use anyway (printed; the compiled one where a C
compiler is here).

Prints milliseconds per trial (wall time of the batch / trials, so ``-j 4`` shows the marginal
cost at that concurrency) and the ratio assay / floor; the issue's targets are 2x for one
sandbox and 1.5x for two. The trials are split into rounds, each a floor batch then an assay
batch back to back, so both see the same load; the figures are medians over the rounds and
every round's own ratio is printed, with the CPU milliseconds per trial of both (the harness's
threads and every process it started: read from a control group holding the bench where the
machine delegates cgroup v1, so processes the bench never reaps count too; else rusage). The machine's load is printed too: the ratio is what
compares.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap import cgroup, pool, rootfs
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.bwrap.locate import find_bwrap
from assay.spec.budget import NetworkProfile

AGENT = ["/bin/sh", "-c", "echo 42 > /workspace/answer"]
CHECK = ["/bin/sh", "-c", "test \"$(cat /workspace/answer)\" = 42"]
TARGET = {1: 2.0, 2: 1.5}


def floor_argv(bwrap: str, workspace: Path, command: list[str]) -> list[str]:
    """One direct bwrap launch: the same system binds and namespaces as assay's sandbox."""
    made = {"/"}
    return [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-net", "--unshare-user", "--uid", "1000", "--gid", "1000", *rootfs.system_args(made),
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(workspace), "/workspace",
            "--chdir", "/workspace", "--", *command]


async def _run(argv: list[str]) -> int:
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL)
    return await proc.wait()


async def on_copy(ws: Path, check) -> None:  # noqa: ANN001 - an async function of the copy's path
    """Copy the workspace (as a trial does for its verifier), run ``check`` on the copy, remove it."""
    snap = Path(tempfile.mkdtemp(prefix="bench-verify-")) / "ws"
    shutil.copytree(ws, snap, symlinks=True)
    try:
        await check(snap)
    finally:
        shutil.rmtree(snap.parent)


async def floor_trial(bwrap: str, sandboxes: int) -> None:
    ws = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    try:
        if await _run(floor_argv(bwrap, ws, AGENT)) != 0:
            raise SystemExit("floor: the agent command failed")
        if sandboxes == 2:
            async def check(snap: Path) -> None:
                if await _run(floor_argv(bwrap, snap, CHECK)) != 0:
                    raise SystemExit("floor: the check failed")
            await on_copy(ws, check)
    finally:
        shutil.rmtree(ws)


async def assay_trial(backend: BwrapBackend, sandboxes: int) -> None:
    ws = Path(tempfile.mkdtemp(prefix="bench-assay-"))
    try:
        sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, label="bench"))
        try:
            res = await sb.exec(AGENT, timeout_s=60)
        finally:
            await sb.destroy()
        if not res.ok:
            raise SystemExit(f"assay: the agent command failed: {res.stderr!r}")
        if sandboxes == 2:
            async def check(snap: Path) -> None:
                vb = await backend.create(SandboxSpec(workspace=snap, network=NetworkProfile.none,
                                                      identity="verifier", label="bench-verify"))
                try:
                    chk = await vb.exec(CHECK, timeout_s=60)
                finally:
                    await vb.destroy()
                if not chk.ok:
                    raise SystemExit(f"assay: the check failed: {chk.stderr!r}")
            await on_copy(ws, check)
    finally:
        shutil.rmtree(ws)


def _rusage_cpu_s() -> float:
    """CPU seconds of this process (all its threads) and of its reaped descendants."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _own_cpu_group() -> Path | None:
    """A CPU-accounting control group holding this process, so every process it starts is
    counted, also those it never reaps (a killed sandbox's init is reaped by the host's init,
    and rusage misses it). cgroup v1 (where the harness may make groups) only; None elsewhere.
    The sandboxes' groups are then made under it, so the counter holds them too."""
    lay = cgroup.layout()
    if lay is None or lay.version != 1:
        return None
    group = lay.parents["cpuacct"] / f"assay-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text("0")
    except OSError:
        return None
    atexit.register(_leave, group)
    cgroup.layout.cache_clear()  # this process's own group moved
    return group


def _leave(group: Path) -> None:
    pool.close()  # the unused prepared groups under it go first
    try:
        (group.parent / "cgroup.procs").write_text("0")
        group.rmdir()
    except OSError:
        pass


_GROUP: Path | None = None


def _cpu_s() -> float:
    """CPU seconds of this process and everything it started (its control group's counter
    when it has one, else rusage)."""
    if _GROUP is not None:
        return int((_GROUP / "cpuacct.usage").read_text()) / 1e9
    return _rusage_cpu_s()


async def batch(make, trials: int, jobs: int) -> tuple[float, float]:  # noqa: ANN001 - a coroutine factory
    """Milliseconds per trial: wall time of ``trials`` trials run ``jobs`` at a time, / trials,
    and CPU time (harness and every process it started) / trials."""
    sem = asyncio.Semaphore(jobs)

    async def one() -> None:
        async with sem:
            await make()
    t0, c0 = time.perf_counter(), _cpu_s()
    await asyncio.gather(*(one() for _ in range(trials)))
    return (time.perf_counter() - t0) * 1000 / trials, (_cpu_s() - c0) * 1000 / trials


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main(trials: int, jobs: list[int], rounds: int) -> None:
    global _GROUP
    binary = find_bwrap()
    if binary is None:
        raise SystemExit("no bwrap here")
    _GROUP = _own_cpu_group()
    backend = BwrapBackend()
    facts = backend.facts()
    per = max(jobs + [2, -(-trials // rounds)])
    print(f"bwrap {binary.version} ({binary.origin}); cgroup: {facts['cgroup']}; identity: {facts['identity_mode']}; "
          f"load average: {_load()}; {os.cpu_count()} cpus; {rounds} rounds of {per} trials per figure")
    print(f"exec launcher: {facts['launcher']} (ASSAY_SANDBOX_LAUNCHER=sh for the shell one)")
    print("cpu ms: " + ("the bench's own control group's counter (every process started, reaped or not)"
                        if _GROUP is not None else "rusage of the bench and its reaped children (misses what it "
                        "never reaps, e.g. a killed sandbox's init)"))
    print("each round runs the floor's batch, then assay's, back to back; figures are medians over the rounds,")
    print("the ratio is the median of the rounds' own ratios (a shared machine's load moves between rounds)")
    print(f"{'trial':<14}{'jobs':>5}{'assay ms':>11}{'floor ms':>11}{'ratio':>8}{'target':>8}         "
          f"{'cpu ms assay/floor':>19}  ratio per round")
    for sandboxes in (1, 2):
        for j in jobs:
            await batch(lambda: floor_trial(str(binary.path), sandboxes), max(j, 2), j)  # warm-up
            await batch(lambda: assay_trial(backend, sandboxes), max(j, 2), j)
            floors, ours = [], []
            for _ in range(rounds):
                floors.append(await batch(lambda: floor_trial(str(binary.path), sandboxes), per, j))
                ours.append(await batch(lambda: assay_trial(backend, sandboxes), per, j))
            ratios = [o[0] / f[0] for o, f in zip(ours, floors)]
            ratio = statistics.median(ratios)
            mark = "met" if ratio <= TARGET[sandboxes] else "MISSED"
            cpu = f"{statistics.median(o[1] for o in ours):.1f}/{statistics.median(f[1] for f in floors):.1f}"
            print(f"{sandboxes} sandbox{'es' if sandboxes > 1 else '':<5}{j:>5}"
                  f"{statistics.median(o[0] for o in ours):>11.1f}{statistics.median(f[0] for f in floors):>11.1f}"
                  f"{ratio:>7.2f}x{TARGET[sandboxes]:>6.1f}x {mark:<7}{cpu:>19}  {' '.join(f'{r:.2f}' for r in ratios)}")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    asyncio.run(main(args.trials, args.jobs, args.rounds))
