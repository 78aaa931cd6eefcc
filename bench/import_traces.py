"""Production-trace import: traces per second read, redacted, deduplicated and written as
candidate cases, for an OTLP/JSON file of N conversations of which a share are duplicates.

    .venv/bin/python bench/import_traces.py [--n 2000] [--distinct 0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from assay.cases import import_traces  # noqa: E402
from tests.cases.fixtures import otel_water_trace  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--distinct", type=float, default=0.5, help="share of distinct conversations")
    a = ap.parse_args()
    distinct = max(1, int(a.n * a.distinct))
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "traces.jsonl"
        with f.open("w") as out:
            for i in range(a.n):
                spans = otel_water_trace(f"{i:032x}")
                attrs = spans[0]["attributes"]
                for kv in attrs:  # make conversation i % distinct its own case
                    if kv["key"] == "gen_ai.input.messages":
                        kv["value"]["stringValue"] = kv["value"]["stringValue"].replace("6 CNY", f"{6 + i % distinct} CNY")
                out.write(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
        t0 = time.perf_counter()
        rep = import_traces(f, "otel", Path(tmp) / "cases")
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        again = import_traces(f, "otel", Path(tmp) / "cases")
        dt2 = time.perf_counter() - t1
    print(f"traces={a.n} distinct={distinct} new={len(rep.new)} merged={len(rep.merged)}")
    print(f"first import: {dt:.2f} s, {a.n / dt:.0f} traces/s")
    print(f"re-import (all already known): {dt2:.2f} s, {a.n / dt2:.0f} traces/s, already={again.already}")


if __name__ == "__main__":
    main()
