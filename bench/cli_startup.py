"""What ``assay --help``, ``assay COMMAND --help`` and ``assay run`` of one trivial trial (the
built-in ``nop`` agent, one declarative check, the default sandbox) cost in fresh processes: wall
and CPU time (user + system of the child), median of N runs, so start-up regressions show
(targets: the root help under 0.2 s, the one-trial run under 0.5 s). CPU time is the figure that
holds on a loaded machine; the load average is printed beside it, and the modules each command
imported (counted once, in the unmeasured first run), which no load changes.

Byte code is written as a user's install has it (``PYTHONDONTWRITEBYTECODE`` is dropped for the
children, and one unmeasured run compiles first): with it set, every start compiles assay's
sources again and measures the compiler, not the start-up.

    .venv/bin/python bench/cli_startup.py [--n 10] [--commands run score export]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def trivial_suite(root: Path) -> Path:
    """One task, nothing to do, one declarative check (``nop`` fails it: exit 0 all the same)."""
    sys.path.insert(0, str(ROOT))
    from tests.conftest import write_suite, write_task

    s = write_suite(root / "suite")
    write_task(s, "f", task={"category": "code", "predicates": [
        {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]}, workspace={"README": "-\n"})
    return s


#: the first, unmeasured run of a command: as ``python -m assay.cli.main``, and it writes how many
#: modules were imported when it ended
COUNTING = """
import atexit, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(str(len(sys.modules))))
sys.argv = ["assay", *sys.argv[2:]]
runpy.run_module("assay.cli.main", run_name="__main__")
"""


def _run_blocking(argv: list[str]) -> None:
    """Run to its end, waited on by a blocking ``waitpid``: ``subprocess.run(timeout=...)`` polls
    with sleeps of up to 50 ms, which rounded every wall time up to the next 50 ms (the figures
    of this bench before 12-06 carry up to that much)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    guard = threading.Timer(120, proc.kill)  # a hung command ends the bench, not the machine
    guard.start()
    try:
        proc.wait()
    finally:
        guard.cancel()


def measure(args: list[str], n: int, out: Path | None = None) -> tuple[float, float, int]:
    """Median wall and CPU seconds of ``assay ARGS`` (``-o`` a fresh folder under ``out`` each time),
    and the modules it imported."""
    walls, cpus = [], []
    with tempfile.NamedTemporaryFile(prefix="bench-modules-") as counted:
        for i in range(n + 1):  # the first compiles and counts, unmeasured
            where = ["-o", str(out / f"run{i}")] if out else []
            argv = [sys.executable, *(["-c", COUNTING, counted.name] if i == 0 else ["-m", "assay.cli.main"]),
                    *args, *where]
            before = os.times()
            t0 = time.perf_counter()
            _run_blocking(argv)
            if i == 0:
                continue
            walls.append(time.perf_counter() - t0)
            after = os.times()
            cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
        modules = int(Path(counted.name).read_text() or 0)
    return statistics.median(walls), statistics.median(cpus), modules


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--commands", nargs="*", default=["run", "score", "export", "k8s"])
    a = ap.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'command':<32} {'wall s (median)':>16} {'cpu s (median)':>15} {'modules':>8}")
    for args in (["--help"], ["--version"], *([c, "--help"] for c in a.commands)):
        wall, cpu, modules = measure(args, a.n)
        print(f"{'assay ' + ' '.join(args):<32} {wall:>16.3f} {cpu:>15.3f} {modules:>8}")
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        wall, cpu, modules = measure(["run", str(trivial_suite(tmp)), "--agent", "nop", "--quiet"], a.n, out=tmp)
        print(f"{'assay run (one trivial trial)':<32} {wall:>16.3f} {cpu:>15.3f} {modules:>8}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
