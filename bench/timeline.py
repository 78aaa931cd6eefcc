"""What one trial's trace timeline costs in the HTML report: the report's drawing (an inline SVG
written directly) against the matplotlib figure of the same events, per trial.

    python bench/timeline.py [--events 40] [--trials 200]
"""

from __future__ import annotations

import argparse
import os
import random
import time

from assay.report import figures as F
from assay.report.timeline_svg import timeline_svg


def events(n: int, seed: int) -> list[F.Event]:
    rng = random.Random(seed)
    kinds = list(F.EVENT_COLOURS) + ["attempt_started", "message"]
    t = 0.0
    out = []
    for i in range(n):
        t += rng.expovariate(2.0)
        out.append(F.Event(t, rng.choice(kinds), f"event {i} <&>", f"#ev-{seed}-{i}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=40, help="events per trial's trace")
    ap.add_argument("--trials", type=int, default=200)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; {args.events} events per trace")
    traces = [events(args.events, s) for s in range(args.trials)]
    t0, c0 = time.perf_counter(), time.process_time()
    size = sum(len(timeline_svg(f"t{i}", ev)) for i, ev in enumerate(traces))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"inline SVG timeline: {wall / args.trials * 1000:8.3f} ms per trial ({cpu / args.trials * 1000:.3f} ms CPU), "
          f"{size / args.trials / 1024:.1f} KiB each")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib timeline: not installed (pip install -e '.[plots]')")
        return
    few = traces[: max(1, args.trials // 10)]
    F.to_svg(F.timeline(few[0]), "warm", "warm")  # matplotlib's first figure pays its imports and fonts
    t0, c0 = time.perf_counter(), time.process_time()
    size = sum(len(F.to_svg(F.timeline(ev), f"t{i}", "trace timeline")) for i, ev in enumerate(few))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"matplotlib timeline: {wall / len(few) * 1000:8.3f} ms per trial ({cpu / len(few) * 1000:.3f} ms CPU), "
          f"{size / len(few) / 1024:.1f} KiB each")


if __name__ == "__main__":
    main()
