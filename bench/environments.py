"""Task images: trial start over an image next to the two-bwrap floor over the same rootfs, the
cost of a cached image (one digest check), and the cold build of the example suite's images.

    .venv/bin/python bench/environments.py [--trials 20] [--rounds 3] [--cold]

A trial here is two sandboxes, as a real one (the agent's, then the verifier's): each created
over the task's image, one command run in it, destroyed. The **floor** does the same with two
plain ``bwrap`` launches whose root is the same image rootfs bound read-only, entry by entry as
assay binds it (no harness Python binds, no supervisor, no bounds). The issue's target is 1.5x. ``--cold`` builds the example
suite into a fresh store first and prints its time (else the recorded build times are printed).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from assay.environments.plan import plan_for
from assay.environments.runtime import ensure_suite, root_of
from assay.environments.store import ImageStore
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.sandbox.bwrap.locate import find_bwrap
from assay.sandbox.image_root import image_args
from assay.spec.budget import NetworkProfile
from assay.spec.load import load_suite

SUITE = Path(__file__).resolve().parents[1] / "examples" / "environments"
AGENT = ["/bin/sh", "-c", "echo 42 > /workspace/answer"]
CHECK = ["/bin/sh", "-c", "test \"$(cat /workspace/answer)\" = 42"]


def floor_argv(bwrap: str, rootfs: Path, workspace: Path, command: list[str]) -> list[str]:
    return [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-net", "--unshare-user", "--uid", "1000", "--gid", "1000",
            *image_args(rootfs, ("/workspace",))[0],
            "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", str(workspace), "/workspace",
            "--chdir", "/workspace", "--", *command]


async def _floor(bwrap: str, rootfs: Path, tmp: Path, n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        ws = tmp / f"f{i}"
        ws.mkdir()
        ws.chmod(0o777)  # the floor's uid 1000 writes it, as the sandbox's own uid does
        for cmd in (AGENT, CHECK):
            proc = await asyncio.create_subprocess_exec(*floor_argv(bwrap, rootfs, ws, cmd))
            assert await proc.wait() == 0
        shutil.rmtree(ws)
    return (time.perf_counter() - t0) / n


async def _assay(backend: BwrapBackend, image: object, tmp: Path, n: int) -> float:
    t0 = time.perf_counter()
    for i in range(n):
        ws = tmp / f"a{i}"
        ws.mkdir()
        for cmd, who in ((AGENT, "agent"), (CHECK, "verifier")):
            sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, image=image,  # type: ignore[arg-type]
                                                  identity=who, label="bench"))
            try:
                assert (await sb.exec(cmd, timeout_s=30)).exit_code == 0
            finally:
                await sb.destroy()
        shutil.rmtree(ws, ignore_errors=True)
    return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="build the example suite into a fresh store first")
    args = ap.parse_args()
    suite = load_suite(SUITE)
    if args.cold:
        cold = ImageStore(Path(tempfile.mkdtemp(prefix="assay-cold-store-")))
        t0 = time.monotonic()
        ensure_suite(suite, store=cold)
        print(f"cold build of the example suite's images: {time.monotonic() - t0:.1f} s")
        shutil.rmtree(cold.root, ignore_errors=True)
    store = ImageStore()
    images = ensure_suite(suite, store=store)
    for info in {i.digest: i for i in images.values()}.values():
        base = store.get(str(info.inputs.get("base", "")).split("@")[-1])
        print(f"image {info.ref[:40]}: built in {info.build_s:.1f} s over a base built in "
              f"{base.build_s if base else float('nan'):.1f} s, {info.size_bytes / 1e6:.0f} MB")
    task = suite.task("apt-jq-gawk")
    assert task.spec.environment is not None
    checks = []
    for _ in range(50):
        t0 = time.perf_counter()
        store.get(plan_for(task.id, task.dir, task.spec.environment).digest)
        checks.append(time.perf_counter() - t0)
    print(f"cached image (plan digest + one store lookup): median {statistics.median(checks) * 1e3:.2f} ms "
          "(target < 100 ms)")
    image = root_of(images[task.id], store)
    bwrap = find_bwrap()
    assert bwrap is not None
    backend = BwrapBackend()
    floors, ours = [], []
    with tempfile.TemporaryDirectory() as d:
        for r in range(args.rounds):
            f = asyncio.run(_floor(str(bwrap.path), image.rootfs, Path(d), args.trials))
            a = asyncio.run(_assay(backend, image, Path(d), args.trials))
            floors.append(f)
            ours.append(a)
            print(f"round {r + 1}: floor {f * 1e3:.1f} ms/trial, assay {a * 1e3:.1f} ms/trial, ratio {a / f:.2f}")
    f, a = statistics.median(floors), statistics.median(ours)
    print(f"two sandboxes over an image: floor {f * 1e3:.1f} ms, assay {a * 1e3:.1f} ms per trial, "
          f"ratio {a / f:.2f} (target 1.5x)")


if __name__ == "__main__":
    main()
