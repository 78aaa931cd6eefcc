"""The trials side file of a score version (``scores/score-NNNN.trials.jsonl``) and the one reader
of a score document's trial rows, wherever they are.

A score document of ``assay.score/2`` keeps its per-trial rows out of its main body: the scorer
streams them, one JSON line per trial, into the side file the document names (``trials_file``,
with its row count and SHA-256), so scoring, reporting and exporting 10^6 trials hold none of them
in memory. A line is ``{"row": TrialRow, "results": {path: sha256}, "trace": {path: sha256}}``:
the trial and the evidence files it was scored from. Score files of ``assay.score/1`` hold their
rows inline (``trials``); :func:`iter_trials` reads both, and is what every reader uses (the
reports, the CI outputs, the viewer, the CLI summary).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from assay.errors import IntegrityError
from assay.records.trial_row import TrialRow, row_dict

if TYPE_CHECKING:
    from assay.records.scores import ScoreDocument

TRIALS_SUFFIX = ".trials.jsonl"


class TrialLine(msgspec.Struct, omit_defaults=True):
    """One line of the side file: the trial and the evidence it was scored from."""

    row: TrialRow
    results: dict[str, str] = {}
    trace: dict[str, str] = {}


_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(TrialLine)
class TrialWriter:
    """Streams rows into a side file, hashing the very bytes it writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._f = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._h = hashlib.sha256()
        self._buf = bytearray()
        self.rows = 0
        self._adopted: str | None = None  # the digest of a file another process wrote here (see adopt)

    def write(self, row: TrialRow, results: dict[str, str] | None = None, trace: dict[str, str] | None = None) -> None:
        _ENCODER.encode_into(TrialLine(row, results or {}, trace or {}), self._buf, -1)
        self._buf.extend(b"\n")
        self.rows += 1
        if len(self._buf) > 1 << 20:
            self._flush()

    def _flush(self) -> None:
        self._h.update(self._buf)
        self._f.write(self._buf)
        self._buf.clear()

    def adopt(self, rows: int, sha256: str) -> None:
        """The file was written whole by another process (score/fold_child.py), which hashed what it
        wrote: nothing was written through this writer, and :meth:`close` gives that digest."""
        if self.rows or self._buf:
            raise RuntimeError(f"{self.path}: rows were written here before another process wrote the file")
        self._f.close()
        self.rows, self._adopted = rows, sha256

    def close(self) -> str:
        """Flush and close; the file's SHA-256."""
        if self._adopted is not None:
            return self._adopted
        self._flush()
        self._f.flush()
        os.fsync(self._f.fileno())
        self._f.close()
        return self._h.hexdigest()

    def abort(self) -> None:
        self._f.close()
        self.path.unlink(missing_ok=True)


def iter_lines(path: Path) -> Iterator[TrialLine]:
    """Every line of a side file; a line that does not decode is damaged evidence, named."""
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            try:
                yield _DECODER.decode(line)
            except msgspec.DecodeError as e:
                raise IntegrityError(f"{path}:{n}: not a trial row of a score: {e}") from None


def trials_path(doc: ScoreDocument) -> Path | None:
    """Where a document's side file is (None: its rows are inline, or it was never written)."""
    if doc.trials_file is None or doc.source_dir is None:
        return None
    return doc.source_dir / doc.trials_file.path


def iter_trials(doc: ScoreDocument) -> Iterator[TrialRow]:
    """THE reader of a score document's trial rows, in the scorer's order: from its side file
    (``assay.score/2``) or inline (``assay.score/1``, and documents scored in memory), through the
    document's row filter when a report withheld some (held-out tasks)."""
    keep: Callable[[TrialRow], TrialRow | None] | None = doc.row_filter
    path = trials_path(doc)
    if doc.trials_file is not None and path is None:
        raise IntegrityError(f"score of run {doc.run_id}: its trials are in {doc.trials_file.path}, "
                             "but the document was not read from a file (fix: read it with read_score)")
    rows: Iterator[TrialRow] = (ln.row for ln in iter_lines(path)) if path is not None else iter(doc.trials)
    if keep is None:
        yield from rows
        return
    for r in rows:
        k = keep(r)
        if k is not None:
            yield k


class _RowId(msgspec.Struct):
    trial_id: str


class _IdLine(msgspec.Struct):
    row: _RowId


_ID_DECODER = msgspec.json.Decoder(_IdLine)


def iter_trials_where(doc: ScoreDocument, whole: Callable[[str], bool]) -> Iterator[tuple[str, TrialRow | None]]:
    """:func:`iter_trials` for a reader that needs only some rows whole: (trial id, the row) of each,
    in the same order, the row decoded only where ``whole(trial id)`` says so (else None), asked
    as each line comes. From a side file and with no row filter only the id of the others is read
    (a fifth of a whole row's decoding: an HTML report of 10^6 trials details 2,000); otherwise
    every row is read whole, as :func:`iter_trials` reads it."""
    path = trials_path(doc)
    if path is None or doc.row_filter is not None:  # inline rows, or a filter that needs each row whole
        for row in iter_trials(doc):
            yield row.trial_id, row
        return
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            try:
                tid = _ID_DECODER.decode(line).row.trial_id
                row = _DECODER.decode(line).row if whole(tid) else None
            except msgspec.DecodeError as e:
                raise IntegrityError(f"{path}:{n}: not a trial row of a score: {e}") from None
            yield tid, row


def iter_inputs(doc: ScoreDocument) -> Iterator[tuple[str, str, str]]:
    """The evidence files a score read, as (kind ``result``/``trace``, path, sha256): the main
    body's ``inputs`` (``assay.score/1``) and the side file's lines (``assay.score/2``)."""
    for kind, d in (("result", doc.inputs.results), ("trace", doc.inputs.traces)):
        for p, s in d.items():
            yield kind, p, s
    path = trials_path(doc)
    if path is not None:
        for ln in iter_lines(path):
            for p, s in ln.results.items():
                yield "result", p, s
            for p, s in ln.trace.items():
                yield "trace", p, s


__all__ = ["TRIALS_SUFFIX", "TrialLine", "TrialWriter", "iter_inputs", "iter_lines", "iter_trials", "iter_trials_where", "row_dict",
           "trials_path"]
