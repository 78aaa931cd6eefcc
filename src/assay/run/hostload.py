"""How busy the host was while an attempt ran: its load average and CPU pressure (PSI).

A wall-time budget measures the agent and the host together. On a host running more than it has
CPUs for, an agent can time out with little CPU time to show for it, and the timeout says more
about the host than the agent (OpenClaw timed out on 8 of 15 tasks at load 14-20 and passed all
of them alone). Each attempt records the load and the share of its wall time in which some task
waited for a CPU (``/proc/pressure/cpu``, "some"); a timeout taken above either threshold is
flagged ``host_contended`` in its result, the score's flags, the report and the comparison.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PSI_CPU = Path("/proc/pressure/cpu")
LOADAVG = Path("/proc/loadavg")
#: a timeout is host_contended when some task waited for a CPU this share of the attempt's wall time...
CONTENDED_PRESSURE = 0.25
#: ...or the 1-minute load average per CPU reached this
CONTENDED_LOAD_PER_CPU = 1.5


@dataclass(frozen=True)
class HostSample:
    """One reading: monotonic time, 1-minute load average, PSI "some" total (microseconds)."""

    at: float
    load1: float | None
    psi_some_us: int | None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:  # no procfs, or a kernel without PSI: not measured, never a failure
        return None


def sample() -> HostSample:
    """Read the host's load and CPU pressure now (None where the kernel does not say)."""
    load = _read(LOADAVG)
    psi = _read(PSI_CPU)
    psi_us = None
    for line in (psi or "").splitlines():
        if line.startswith("some "):
            fields = dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)
            psi_us = int(fields["total"]) if fields.get("total", "").isdigit() else None
    try:
        load1 = float(load.split()[0]) if load else None
    except (ValueError, IndexError):
        load1 = None
    return HostSample(time.monotonic(), load1, psi_us)


def cpus() -> int:
    """CPUs this process may run on (its affinity), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class HostLoad:
    load_per_cpu: float | None  # the higher of the start and end 1-minute load averages, per CPU
    cpu_pressure: float | None  # share of the wall time in which some task waited for a CPU


def between(start: HostSample, end: HostSample, n_cpus: int | None = None) -> HostLoad:
    """The host's load over an attempt, from its first and last readings."""
    n = n_cpus or cpus()
    loads = [x for x in (start.load1, end.load1) if x is not None]
    per_cpu = round(max(loads) / n, 3) if loads else None
    pressure = None
    wall = end.at - start.at
    if start.psi_some_us is not None and end.psi_some_us is not None and wall > 0:
        pressure = round(min(1.0, max(0.0, (end.psi_some_us - start.psi_some_us) / 1e6 / wall)), 3)
    return HostLoad(per_cpu, pressure)


def contended(load: HostLoad) -> bool:
    """The host was overloaded by either measure (unknown measures never flag)."""
    return ((load.cpu_pressure is not None and load.cpu_pressure >= CONTENDED_PRESSURE)
            or (load.load_per_cpu is not None and load.load_per_cpu >= CONTENDED_LOAD_PER_CPU))


def default_jobs(requested: int, n_cpus: int | None = None) -> int:
    """``requested`` parallel trials capped to what the host can run: its CPUs (each sandboxed
    agent needs one to keep its wall-time budget meaningful)."""
    return max(1, min(requested, n_cpus or cpus()))
