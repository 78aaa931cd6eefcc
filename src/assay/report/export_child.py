"""The rows of a large export built and written by a process of its own, beside the scan.

At 10^6 trials `assay export` spent about two thirds of its time in the scan (reading and checking
each trial) and a third building and encoding its rows, one after the other on one core. Here the
scan stays in the exporting process, with every check and the refusal; each trial's results go,
as the very bytes the scan read and accepted, to ``python -m assay.report.export_child``, which
decodes them with the scan's own decoder and writes their rows through the same functions
(:func:`assay.report.export_rows.trial_rows` and ``write_rows``) to the file being written. The
rows' context comes from the exporting process (the child reads no manifest). The frames are
pickles between this process and its own child, never read from anywhere else. A child that dies
fails the export, naming its exit, and the file is never put in place.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
from pathlib import Path
from typing import Any, Iterator

from assay.report.export_rows import RowContext, trial_rows, write_rows
from assay.store.fastread import decode_result
from assay.store.log_child import workers_allowed
from assay.store.scan import RunScan, TrialRead
from assay.store.framed_child import FramedChild
from assay.store.scan_workers import receive_frame, usable_cores

#: an export of at least this many planned trials writes its rows in a process of its own (one
#: costs about 0.3 s to start; the same size from which a score folds in one, score/fold_child.py)
EXPORT_CHILD_FROM = 20_000
_log = logging.getLogger(__name__)


def export_in_child(planned: int, readers: int, fmt: str) -> bool:
    """Whether an export writes its rows in a child: a large run whose scan has no reading processes
    of its own (those already keep every core busy), on two or more cores, in a streamed format
    (Parquet builds its table whole), unless ``ASSAY_SCAN_WORKERS`` keeps a scan in one process."""
    return (fmt in ("jsonl", "csv") and planned >= EXPORT_CHILD_FROM and readers == 0 and usable_cores() >= 2
            and workers_allowed())


def rows_in_child(scan: RunScan, planned: list[str], ctx: RowContext, out: Path, fmt: str) -> bool:
    """The scan's reading, in the export's order, handed to a child that writes the rows to ``out``
    (False: no child could start, nothing was read; the caller writes the rows itself)."""
    try:
        child = ExportChild(out, fmt, ctx)
    except OSError as e:
        _log.warning("no process could start to write the export's rows (%s); writing them here", e)
        return False
    try:
        for tid, read in scan.read_in_order(planned):
            child.trial(tid, read)
        child.finish()
    except BaseException:
        child.abort()
        raise
    return True


class ExportChild(FramedChild):
    """The exporting process's side: trials in, in the export's order; the rows written there."""

    failure = ("the process writing the export's rows ended with exit code {code} (its error is above); "
               "nothing was exported")

    def __init__(self, out: Path, fmt: str, ctx: RowContext) -> None:
        super().__init__([sys.executable, "-m", "assay.report.export_child", str(out), fmt], ctx)

    def trial(self, tid: str, read: TrialRead | None) -> None:
        if read is None or not read.attempts:
            self.add((tid, [], []))
        else:
            self.add((tid, read.raws, [rel for rel, _digest in read.result_digests]))


def _rows(inp: Any, ctx: RowContext) -> Iterator[dict[str, Any]]:
    while (batch := receive_frame(inp)) is not None:
        for tid, raws, rels in batch:
            # the bytes the scan parsed and accepted, decoded by the same decoder: the same attempts
            yield from trial_rows(ctx, tid, [decode_result(raw, rel) for raw, rel in zip(raws, rels)])


def _serve(out: str, fmt: str) -> None:
    os.dup2(2, 1)  # anything printed goes to stderr
    gc.freeze()  # the modules: never collected, never walked again
    inp = sys.stdin.buffer
    ctx = receive_frame(inp)
    write_rows(_rows(inp, ctx), out, fmt)


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
