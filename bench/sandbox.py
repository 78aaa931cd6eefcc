"""Per-trial sandbox cost of assay next to the raw floor, measured in the same run.

    .venv/bin/python bench/sandbox.py [--trials 40] [--rounds 5] [--jobs 1 4] [--parts backend harness]
                                      [--executors local procs]

Two tables. ``backend``: assay's sandbox backend against the one-bwrap floor (below).
``harness``: the harness's marginal one-sandbox trial, a whole attempt through ``start_run``
(bench/harness_trial.py: the difference of two campaigns, so what a run pays once cancels),
against both floors in the same rounds: the one-bwrap floor and assay's own launcher floor (the
backend's create, exec, destroy alone); target 1.5x the bwrap floor at ``-j 4``.
``--executors local procs`` measures the harness under each executor named (``procs``: attempts
in worker processes, one per usable CPU; default: local, and any in ``ASSAY_BENCH_EXECUTORS=name,...``).

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

import harness_trial  # noqa: E402 - bench/ is the script's own folder, first on sys.path

AGENT = ["/bin/sh", "-c", "echo 42 > /workspace/answer"]
CHECK = ["/bin/sh", "-c", "test \"$(cat /workspace/answer)\" = 42"]
TARGET = {1: 2.0, 2: 1.5}
HARNESS_TARGET = 1.5  # the harness's marginal one-sandbox trial at -j 4 against the one-bwrap floor (issue 32)


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


def _batch(make, trials: int, jobs: int) -> tuple[float, float]:  # noqa: ANN001 - (backend) -> coroutine
    """:func:`batch` in an event loop of its own, with a backend of its own (as each run has)."""
    async def go() -> tuple[float, float]:
        backend = BwrapBackend()
        return await batch(lambda: make(backend), trials, jobs)
    return asyncio.run(go())


def _ratios(ours: list[tuple[float, float]], base: list[tuple[float, float]]) -> tuple[float, list[float]]:
    ratios = [o[0] / b[0] for o, b in zip(ours, base)]
    return statistics.median(ratios), ratios


def _med(figs: list[tuple[float, float]], k: int) -> float:
    return statistics.median(f[k] for f in figs)


def backend_table(bwrap: str, jobs: list[int], rounds: int, per: int) -> None:
    """assay's backend (create, exec, destroy) against the one-bwrap floor, 1 and 2 sandboxes."""
    print("each round runs the floor's batch, then assay's, back to back; figures are medians over the rounds,")
    print("the ratio is the median of the rounds' own ratios (a shared machine's load moves between rounds)")
    print(f"{'trial':<14}{'jobs':>5}{'assay ms':>11}{'floor ms':>11}{'ratio':>8}{'target':>8}         "
          f"{'cpu ms assay/floor':>19}  ratio per round")
    for sandboxes in (1, 2):
        for j in jobs:
            _batch(lambda b: floor_trial(bwrap, sandboxes), max(j, 2), j)  # warm-up
            _batch(lambda b: assay_trial(b, sandboxes), max(j, 2), j)
            floors, ours = [], []
            for _ in range(rounds):
                floors.append(_batch(lambda b: floor_trial(bwrap, sandboxes), per, j))
                ours.append(_batch(lambda b: assay_trial(b, sandboxes), per, j))
            ratio, ratios = _ratios(ours, floors)
            mark = "met" if ratio <= TARGET[sandboxes] else "MISSED"
            cpu = f"{_med(ours, 1):.1f}/{_med(floors, 1):.1f}"
            print(f"{sandboxes} sandbox{'es' if sandboxes > 1 else '':<5}{j:>5}{_med(ours, 0):>11.1f}{_med(floors, 0):>11.1f}"
                  f"{ratio:>7.2f}x{TARGET[sandboxes]:>6.1f}x {mark:<7}{cpu:>19}  {' '.join(f'{r:.2f}' for r in ratios)}")


def harness_table(bwrap: str, jobs: list[int], rounds: int, per: int, executors: list[str]) -> None:
    """The harness's marginal one-sandbox trial (a whole attempt through ``start_run``) against
    both floors, measured in the same rounds: the one-bwrap floor and assay's own launcher floor
    (its backend's create, exec, destroy alone, what any attempt pays)."""
    suite = harness_trial.one_sandbox_suite(Path(tempfile.mkdtemp(prefix="bench-suite-")))
    print()
    print(f"the harness's marginal one-sandbox trial (bench/harness_trial.py: campaigns of j and j+{per} trials, "
          "the difference / {per}),".replace("{per}", str(per)))
    print("each round: the bwrap floor's batch, the launcher floor's (assay's backend alone), the harness's campaigns;")
    print(f"target: {HARNESS_TARGET}x the bwrap floor at -j 4")
    print("head cpu ms: the runner's own process alone (with --executor procs, what no worker takes off it)")
    print(f"{'executor':<10}{'jobs':>5}{'harness ms':>12}{'launcher ms':>13}{'bwrap ms':>10}{'/bwrap':>8}{'/launcher':>11}"
          f"{'cpu ms harness/launcher/bwrap':>31}{'head cpu ms':>13}  /bwrap per round")
    for executor in executors:
        for j in jobs:
            harness_trial.campaign(suite, j, j, executor, _cpu_s)  # warm-up
            floors, launchers, ours = [], [], []
            for _ in range(rounds):
                floors.append(_batch(lambda b: floor_trial(bwrap, 1), per, j))
                launchers.append(_batch(lambda b: assay_trial(b, 1), per, j))
                ours.append(harness_trial.marginal(suite, per, j, executor, _cpu_s))
            ratio, ratios = _ratios(ours, floors)
            to_launcher, _ = _ratios(ours, launchers)
            cpu = f"{_med(ours, 1):.1f}/{_med(launchers, 1):.1f}/{_med(floors, 1):.1f}"
            print(f"{executor:<10}{j:>5}{_med(ours, 0):>12.1f}{_med(launchers, 0):>13.1f}{_med(floors, 0):>10.1f}"
                  f"{ratio:>7.2f}x{to_launcher:>10.2f}x{cpu:>31}{_med(ours, 2):>13.1f}  "
                  f"{' '.join(f'{r:.2f}' for r in ratios)}")
    shutil.rmtree(suite.parent, ignore_errors=True)


def main(trials: int, jobs: list[int], rounds: int, parts: list[str], executors: list[str]) -> None:
    global _GROUP
    binary = find_bwrap()
    if binary is None:
        raise SystemExit("no bwrap here")
    _GROUP = _own_cpu_group()
    facts = BwrapBackend().facts()
    per = max(jobs + [2, -(-trials // rounds)])
    print(f"bwrap {binary.version} ({binary.origin}); cgroup: {facts['cgroup']}; identity: {facts['identity_mode']}; "
          f"load average: {_load()}; {os.cpu_count()} cpus; {rounds} rounds of {per} trials per figure")
    print(f"exec launcher: {facts['launcher']} (ASSAY_SANDBOX_LAUNCHER=sh for the shell one)")
    print("cpu ms: " + ("the bench's own control group's counter (every process started, reaped or not)"
                        if _GROUP is not None else "rusage of the bench and its reaped children (misses what it "
                        "never reaps, e.g. a killed sandbox's init)"))
    if "backend" in parts:
        backend_table(str(binary.path), jobs, rounds, per)
    if "harness" in parts:
        harness_table(str(binary.path), jobs, rounds, per, executors)
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--parts", nargs="+", choices=["backend", "harness"], default=["backend", "harness"])
    ap.add_argument("--executors", nargs="+", choices=["local", "procs", "ray"], default=harness_trial.executors(),
                    help="the executors of the harness table (procs: one worker process per usable CPU)")
    args = ap.parse_args()
    main(args.trials, args.jobs, args.rounds, args.parts, args.executors)
