"""The fold of a large run in a process of its own, beside the scan that reads and checks it.

At 10^6 trials the scoring process spent about as long checking and reading each trial (the
scan) as folding it (the row, the screen, the aggregates, the side file), one after the other on
one core. Here the scan stays in the scoring process, with every check, the refusal and the
reward-hack screen (the folding process has the more to do of the two), and hands
each trial as it read it (the very bytes of its results, their digests, what the reading saw of
its trace) to ``python -m assay.score.fold_child``, which decodes them with the scan's own decoder
and folds them through :mod:`assay.score.folding`, the code the scoring process runs for a small
run, writing the side file; its outcome comes back whole when the last trial was sent. The frames
are pickles between this process and its own child, never read from anywhere else. A child that
dies fails the score, naming its exit; it never yields a document.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Container
from pathlib import Path

from assay.records.trial_file import TrialWriter
from assay.score.folding import FoldOutcome, ScoreInputs, TrialFolder, fold_read
from assay.score.trials import TrialFacts
from assay.store.fastread import decode_result
from assay.store.log_child import workers_allowed
from assay.store.rundir import RunDir
from assay.store.scan import TrialRead
from assay.store.framed_child import FramedChild
from assay.store.scan_workers import receive_frame, send_frame, usable_cores

#: a plan of at least this many trials is folded in a process of its own (one costs ~0.3 s to start)
FOLD_CHILD_FROM = 20_000


def fold_in_child(planned: int, wanted: bool | None, *, readers: int = 0) -> bool:
    """Whether a score of ``planned`` trials folds in a child (``wanted`` None: by the run's size,
    on two or more cores, unless ``ASSAY_SCAN_WORKERS`` keeps the scan in one process, and only
    when the scan has no ``readers``, processes of its own reading trial folders: those already
    keep every core busy (a real run's 90,000 trials with their traces: 11.5-12.2 s folded here,
    12.6-12.8 s apart), where a run whose results are all in the log is read by the scanning
    process alone and folding beside it takes a third off)."""
    if wanted is not None:
        return wanted
    return planned >= FOLD_CHILD_FROM and readers == 0 and usable_cores() >= 2 and workers_allowed()


class FoldChild(FramedChild):
    """The scoring process's side: trials in, in the plan's order; the outcome out at the end."""

    failure = ("the process folding the trials ended with exit code {code} (its error is above); "
               "nothing was scored")

    def __init__(self, root: Path, side_file: Path, controls: Container[str], category_weights: dict[str, float],
                 capability_weights: dict[str, float]) -> None:
        super().__init__([sys.executable, "-m", "assay.score.fold_child", str(root), str(side_file)],
                         (set(controls), category_weights, capability_weights), answers=True)

    def trial(self, tid: str, read: TrialRead) -> None:
        if (len(read.raws) == 1 and read.artifacts_ok and not read.has_trace and read.trace_digest is None
                and read.extra is None):  # most trials of a results log: half the pickling, a fifth the unpickling
            (rel, digest), = read.result_digests
            self.add((tid, read.raws[0], rel, digest))
        else:
            self.add((tid, read.raws, read.result_digests, read.artifacts_ok, read.has_trace, read.trace_digest,
                      read.extra))

    def missing(self, facts: TrialFacts) -> None:
        self.add((facts,))

    def finish(self) -> tuple[FoldOutcome, int, str]:
        """(the fold's outcome, rows written, the side file's SHA-256)."""
        return super().finish()


def _serve(root: str, side_file: str) -> None:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed goes to stderr, never into a frame
    gc.freeze()  # the modules and the run's constants: never collected, never walked again
    inp = sys.stdin.buffer
    controls, category_weights, capability_weights = receive_frame(inp)
    rd = RunDir.open(root)
    writer = TrialWriter(Path(side_file))
    folder = TrialFolder(controls, keep_trials=False, writer=writer)
    inputs = ScoreInputs()
    while (batch := receive_frame(inp)) is not None:
        for item in batch:
            if len(item) == 1:
                folder.add(item[0], inputs)
                continue
            # the bytes the scan parsed and accepted, decoded by the same decoder: the same attempts
            if len(item) == 4:  # one attempt, nothing else read beside it (FoldChild.trial)
                tid, raw, rel, digest = item
                read = TrialRead(tid, attempts=[decode_result(raw, rel)], result_digests=[(rel, digest)], raws=[raw])
            else:
                tid, raws, digests, artifacts_ok, has_trace, trace_digest, extra = item
                attempts = [decode_result(raw, rel) for raw, (rel, _d) in zip(raws, digests)]
                read = TrialRead(tid, attempts=attempts, result_digests=digests, raws=raws, artifacts_ok=artifacts_ok,
                                 has_trace=has_trace, trace_digest=trace_digest, extra=extra)
            folder.add(fold_read(rd, tid, read, inputs, None), inputs)  # screened by the scanning process
    outcome = folder.finish(category_weights, capability_weights)
    send_frame(out, (outcome, writer.rows, writer.close()))
    out.close()


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2])
