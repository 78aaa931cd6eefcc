"""Workspace benchmark: what a trial's workspace costs the harness, per fixture size.

Prints figures, asserts nothing. For a fixture of F files totalling M MB, and for an empty one,
for today's copy of the fixture (``ASSAY_WORKSPACE=copy``, the fallback) and the overlay over it
(:mod:`assay.sandbox.overlay_ws`, root), side by side with the floor (two plain ``cp -a``):

- **setup**: the workspace made for one attempt and its initial state taken (what the
  ``prepare`` and ``setup`` phases do: :func:`assay.run.workspace.make_workspace` then
  :func:`assay.run.workspace.initial_state`);
- **verifier snapshot** after the agent changed 10 files: the final state walked, diffed and
  handed to the verifier (:func:`assay.run.workspace.final_state`, what ``teardown`` and
  ``verify`` do), without and with a code-executing predicate's own copy.

    python bench/workspace.py                    # F=50000 files, M=500 MB
    python bench/workspace.py --files 5000 --mb 50
    ASSAY_BENCH_DIR=/dev/shm TMPDIR=/dev/shm python bench/workspace.py   # all on tmpfs: harness CPU, no disk
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from assay.run import workspace as ws_mod
from assay.sandbox import overlay_ws
from assay.store.workspace_diff import build_workspace_diff
from assay.verify.snapshot import copy_snapshot


def make_fixture(root: Path, files: int, mb: int) -> Path:
    """``files`` files in folders of 100, ``mb`` MB in all (incompressible-ish, all different)."""
    size = max(1, (mb << 20) // max(1, files))
    for i in range(files):
        d = root / f"d{i // 100:04d}"
        if i % 100 == 0:
            d.mkdir(parents=True)
        (d / f"f{i:06d}.txt").write_bytes(i.to_bytes(4, "little") * (size // 4))
    root.mkdir(parents=True, exist_ok=True)
    return root


def timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


BUDGET = 1 << 40


def change_ten(live: Path) -> None:
    for i in range(10):  # the agent's change (new files in an empty workspace)
        (live / f"d{i:04d}").mkdir(exist_ok=True)
        (live / f"d{i:04d}" / f"f{i * 100:06d}.txt").write_text("changed\n")


def trial(fixture: Path, scratch: Path, task_cache: dict) -> dict[str, float]:
    """One trial's workspace work as the phases now do it (the task's cached state reused)."""
    reset(scratch)
    live = scratch / "workspace"
    t0 = time.perf_counter()
    ws_mod.make_workspace(fixture, live, [])
    initial = ws_mod.initial_state(fixture, live, "bench", setup_ran=False, budget=BUDGET, cache=task_cache)
    t_setup = time.perf_counter() - t0
    change_ten(live)
    t0 = time.perf_counter()
    final = ws_mod.final_state(live, initial.scan, BUDGET)  # teardown: one reading, for the diff ...
    build_workspace_diff(live, initial.scan, before=fixture, hash_budget=BUDGET, now=final.scan,
                         changed=final.changed)  # over an overlay, the names its upper changed alone
    _ = final.digests  # ... and the verifier's digests: it reads the frozen workspace in place
    t_snap = time.perf_counter() - t0
    # a code predicate's own site (verify/site.py:open_site): a layer over a frozen overlay, else a copy
    t_site, _ = timed(lambda: overlay_ws.stack(live, scratch / "site", scratch / "site.layers")
                      or copy_snapshot(live, scratch / "site"))
    return {"setup": t_setup, "snapshot": t_snap, "site_copy": t_site}


def real_trial(fixture: Path, root: Path, sandbox: str) -> dict[str, float]:
    """One real oracle trial (its own sandbox, setup, verifier) over ``fixture``: the phases'
    seconds as the result records them."""
    import yaml

    from assay.run import RunOptions, start_run

    suite = root / "suite"
    task = suite / "tasks" / "t"
    task.mkdir(parents=True)
    (suite / "suite.yaml").write_text(yaml.safe_dump({"name": "b", "version": "1", "categories": [{"id": "c"}]}))
    (task / "task.yaml").write_text(yaml.safe_dump({"category": "c", "predicates": [
        {"id": "p", "kind": "file_contains", "path": "out.txt", "text": "done"}]}))
    (task / "prompt.md").write_text("bench\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("echo done > out.txt\n")
    shutil.copytree(fixture, task / "workspace", symlinks=True)
    r = start_run(RunOptions(suite=suite, agents=["oracle"], out=root / "run", sandbox=sandbox)).results[0]
    assert r.end_state.value == "pass", r
    return {"setup": r.timings.setup_s, "verify": r.timings.verify_s, "wall": r.timings.wall_s}


def reset(scratch: Path) -> None:
    ws_mod.release_workspace(scratch / "site")
    ws_mod.release_workspace(scratch / "workspace")  # an overlay is unmounted before its scratch goes
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir()


def floor(fixture: Path, scratch: Path) -> float:
    for d in ("a", "b"):
        if (scratch / d).exists():
            shutil.rmtree(scratch / d)
    t0 = time.perf_counter()
    subprocess.run(["cp", "-a", str(fixture), str(scratch / "a")], check=True)
    subprocess.run(["cp", "-a", str(scratch / "a"), str(scratch / "b")], check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50_000)
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--trials", type=int, default=2, help="trials per fixture (the first fills the task's cache)")
    ap.add_argument("--real", default="bwrap", help="sandbox of one real trial per fixture ('' for none)")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="assay-bench-ws-", dir=os.environ.get("ASSAY_BENCH_DIR")))
    try:
        empty = base / "empty"
        empty.mkdir()
        t_make, big = timed(lambda: make_fixture(base / "big", args.files, args.mb))
        print(f"fixture: {args.files} files, {args.mb} MB (made in {t_make:.1f} s)")
        rows: dict[str, dict[str, float]] = {}
        for mode in ("copy", "overlay"):  # today's copy (the fallback) and the overlay over the fixture
            os.environ["ASSAY_WORKSPACE"] = mode
            for name, fx in (("empty", empty), ("big", big)):
                cache: dict = {}
                runs = [trial(fx, base / f"t-{mode}-{name}", cache) for _ in range(args.trials)]
                rows[f"{mode}-{name}"] = {k: min(r[k] for r in runs[1:] or runs) for k in runs[0]}
                rows[f"{mode}-{name}"]["first_setup"] = runs[0]["setup"]
                reset(base / f"t-{mode}-{name}")
        del os.environ["ASSAY_WORKSPACE"]
        if not overlay_ws.get(base / "probe" / "workspace") and overlay_ws.create(
                empty, base / "probe" / "workspace", base / "probe" / "layers") is None:
            print("NOTE: the kernel refused an overlay here: the overlay rows are copies")
        reset(base / "probe")
        t_floor = floor(big, base)
        print(f"{'':32}{'copy: empty':>12}{'fixture':>10}{'above':>10}{'overlay: empty':>16}{'fixture':>10}{'above':>10}")
        labels = {"first_setup": "setup, first trial of the task", "setup": "setup, later trials",
                  "snapshot": "final state (10 changed)", "site_copy": "+ a code predicate's site"}
        for k, label in labels.items():
            ce, cb = rows["copy-empty"][k], rows["copy-big"][k]
            oe, ob = rows["overlay-empty"][k], rows["overlay-big"][k]
            print(f"{label:32}{ce * 1e3:>10.1f}ms{cb * 1e3:>8.1f}ms{(cb - ce) * 1e3:>8.1f}ms"
                  f"{oe * 1e3:>14.1f}ms{ob * 1e3:>8.1f}ms{(ob - oe) * 1e3:>8.1f}ms")
        print(f"{'floor: two cp -a':32}{'':>12}{t_floor * 1e3:>8.1f}ms")
        for mode in ("copy", "overlay"):
            e, b = rows[f"{mode}-empty"], rows[f"{mode}-big"]
            per = b["setup"] + b["snapshot"] - e["setup"] - e["snapshot"]
            print(f"{mode:>8}: per trial (no code predicate) {per * 1e3:.1f} ms above empty = {per / t_floor:.2f}x "
                  f"the floor, {per / max(1, args.files) * 1e6:.1f} us per fixture file; setup alone "
                  f"{(b['setup'] - e['setup']) * 1e3:.1f} ms above empty")
        if args.real:
            real = {n: real_trial(fx, base / f"r-{n}", args.real) for n, fx in (("empty", empty), ("big", big))}
            for k in ("setup", "verify", "wall"):
                e, b = real["empty"][k], real["big"][k]
                print(f"{'real trial: ' + k:30}{e * 1e3:>8.1f}ms{b * 1e3:>8.1f}ms{(b - e) * 1e3:>11.1f}ms")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
