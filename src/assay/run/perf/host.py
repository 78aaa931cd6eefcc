"""CPU steal over a measurement: the share of CPU time the hypervisor gave to someone else
(``/proc/stat``'s ``steal`` column), recorded beside each figure with the load and PSI."""

from __future__ import annotations

from pathlib import Path

PROC_STAT = Path("/proc/stat")


def _cpu_line() -> list[int] | None:
    try:
        first = PROC_STAT.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu" or len(first) < 9:
        return None
    try:
        return [int(x) for x in first[1:]]
    except ValueError:
        return None


class Steal:
    """Started at construction; :meth:`share` is the steal share of all CPU time since."""

    def __init__(self) -> None:
        self.start = _cpu_line()

    def share(self) -> float | None:
        end = _cpu_line()
        if self.start is None or end is None:
            return None
        delta = [b - a for a, b in zip(self.start, end)]
        total = sum(delta[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
        return round(delta[7] / total, 4) if total > 0 else None
