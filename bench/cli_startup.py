"""What ``assay --help`` and ``assay COMMAND --help`` cost in fresh processes: wall and CPU time
(user + system of the child), median of N runs, so start-up regressions show (target for the
root help: under 0.2 s). CPU time is the figure that holds on a loaded machine.

    .venv/bin/python bench/cli_startup.py [--n 10] [--commands run score export]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def measure(args: list[str], n: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(n):
        before = os.times()
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "assay.cli.main", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False, timeout=120)
        walls.append(time.perf_counter() - t0)
        after = os.times()
        cpus.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--commands", nargs="*", default=["run", "score", "export", "k8s"])
    a = ap.parse_args()
    print(f"{'command':<24} {'wall s (median)':>16} {'cpu s (median)':>15}")
    for args in (["--help"], ["--version"], *([c, "--help"] for c in a.commands)):
        wall, cpu = measure(args, a.n)
        print(f"{'assay ' + ' '.join(args):<24} {wall:>16.3f} {cpu:>15.3f}")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
