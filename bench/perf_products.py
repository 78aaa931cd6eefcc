"""Product performance at the full sizes: every scenario of ``bench/perf_products.yaml`` (cold
start; resume at 10, 100, 1,000 turns; a store of 10², 10³, 10⁴ sessions; 10 live turns; a long
history of long messages; 1, 4, 16 sessions at once) for each product, against the scripted
gateway, then the curves with their fitted exponents. Each agent's folder is a performance
folder (``assay compare`` gates read it); the Markdown printed is what docs/performance.md keeps.

    python bench/perf_products.py                           # pi, hermes, openclaw, dsh; repeat 5
    python bench/perf_products.py --agents pi --repeat 3 --out /tmp/perf
    python bench/perf_products.py --scenario resume --scenario turns
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from assay.agents.registry import resolve_agent
from assay.report.perf import render_markdown
from assay.run.perf.runner import run_perf
from assay.sandbox.registry import get_backend
from assay.score.perf import score_folder
from assay.spec.perf import load_perf_suite

SUITE = Path(__file__).with_name("perf_products.yaml")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", nargs="+", default=["pi", "hermes", "openclaw", "dsh"])
    ap.add_argument("--repeat", type=int, default=5, help="repetitions of every figure (default 5)")
    ap.add_argument("--scenario", action="append", default=[], help="only these scenario ids")
    ap.add_argument("--suite", type=Path, default=SUITE)
    ap.add_argument("--out", type=Path, default=Path("perf-bench"))
    ap.add_argument("--full", action="store_true", help="every figure, not only each curve's largest size")
    args = ap.parse_args()
    suite = load_perf_suite(args.suite)
    for name in args.agents:
        info = resolve_agent(name).info()
        if not info.usable:
            print(f"{name}: not usable here ({info.detail}); skipped", file=sys.stderr)
            continue
        out = args.out / name
        t0 = time.monotonic()
        run_perf(suite, {name: lambda name=name: resolve_agent(name)}, get_backend("bwrap"), out,
                 repeat=args.repeat, only=set(args.scenario) or None,
                 progress=lambda s: print(f"  {s}", file=sys.stderr, flush=True))
        doc = score_folder(out)
        print(render_markdown(doc, full=args.full))
        taken = [f for f in doc.figures if f.status.value == "measured"]
        busy = sum(1 for f in taken if f.host.contended)
        print(f"_{name}: {busy} of {len(taken)} figures taken under contention (marked ⚠; load, PSI and "
              "steal beside each)._\n")
        print(f"_{name}: {time.monotonic() - t0:.0f} s of wall time for the whole bench._\n", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
