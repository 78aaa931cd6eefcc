"""Trace writing: events per second and file writes per attempt, unbuffered (one append per
event, as before) versus buffered (the engine's attempts: events kept in memory, one append
and one fsync when the attempt is sealed).

    .venv/bin/python bench/trace.py [--events 20000] [--attempts 20]

Prints, for each mode, the wall time, events/s and the number of write calls on the trace file.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from unittest import mock

from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter


def run(buffered: bool, events: int, attempts: int, root: Path) -> tuple[float, int]:
    path = root / f"trace-{'b' if buffered else 'u'}.jsonl"
    w = TraceWriter(path, "t.base.a.r1", buffered=buffered)
    per = events // attempts
    opened = 0
    real_open = open

    def counting_open(*a, **k):  # noqa: ANN002, ANN003 - counts the appends the writer makes
        nonlocal opened
        if a and str(a[0]) == str(path):
            opened += 1
        return real_open(*a, **k)

    t0 = time.perf_counter()
    with mock.patch("builtins.open", counting_open):
        for n in range(1, attempts + 1):
            w.attempt = n
            for i in range(per):
                w.emit(Source.agent, EventKind.tool_call, {"call_id": f"c{i}", "name": "shell",
                                                          "arguments": {"command": "echo hi " * 4}})
            w.flush()
    return time.perf_counter() - t0, opened


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--attempts", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for buffered in (False, True):
            secs, writes = run(buffered, args.events, args.attempts, Path(tmp))
            label = "buffered (written at seal)" if buffered else "unbuffered (per event)"
            print(f"{label:28s} {args.events} events in {secs:.3f} s  {args.events / secs:,.0f} events/s  "
                  f"{writes} file opens for {args.attempts} attempts")


if __name__ == "__main__":
    main()
