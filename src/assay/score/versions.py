"""Score versions: every scoring writes ``scores/score-NNNN.json`` beside the older ones.

The file is created exclusively with the next free number (a concurrent scorer that takes the
same number makes this one move on), then sealed in the run's ledger so ``assay verify`` notices
if it is edited later. Nothing here ever overwrites or deletes a score.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from pydantic import ValidationError

from assay.errors import IntegrityError, RunDirError
from assay.records.json_out import pretty_json
from assay.records.scores import ScoreDocument, TrialsFile
from assay.records.trial_file import TRIALS_SUFFIX, TrialWriter, iter_trials
from assay.score.engine import score_run
from assay.store.rundir import SCORES, RunDir, write_exclusive

_NAME = re.compile(r"^score-([0-9]{4,})\.json$")  # ASCII digits: \d also takes ١ (and int reads it)


def score_files(path: Path | str) -> list[Path]:
    """Existing score versions of a run, oldest first."""
    d = Path(path) / SCORES
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name))]
    return [p for _, p in sorted(found)]


def next_number(path: Path | str) -> int:
    files = score_files(path)
    return int(_NAME.match(files[-1].name).group(1)) + 1 if files else 1  # type: ignore[union-attr]


def write_score(path: Path | str | RunDir, doc: ScoreDocument | None = None) -> Path:
    """Score the run (unless ``doc`` is given) and write it as a new numbered score version: the
    document ``score-NNNN.json`` and its trial rows, streamed as they are folded, in the side file
    ``score-NNNN.trials.jsonl`` it names (``assay.score/2``); both are sealed in the run's ledger."""
    rd = RunDir.open(path)
    (rd.path / SCORES).mkdir(exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=".tmp-score-", suffix=TRIALS_SUFFIX, dir=rd.path / SCORES)
    os.close(fd)
    tmp = Path(name)
    writer = TrialWriter(tmp)
    try:
        if doc is None:
            doc = score_run(rd, writer=writer)
        else:
            for row in iter_trials(doc):
                writer.write(row)
            doc = doc.model_copy(update={"trials": []})
    except BaseException:
        writer.abort()
        raise
    side = TrialsFile(path="", rows=writer.rows, sha256=writer.close())
    try:
        for _ in range(1000):
            n = next_number(rd.path)
            target = rd.path / SCORES / f"score-{n:04d}.json"
            rows = target.with_name(f"score-{n:04d}{TRIALS_SUFFIX}")
            try:
                os.link(tmp, rows)  # exclusive: fails when another scorer took this number
            except FileExistsError:
                continue
            body = doc.model_copy(update={"score_version": n, "trials_file": side.model_copy(
                update={"path": rows.name})}).dump()
            try:
                write_exclusive(target, pretty_json(body))
            except RunDirError:
                rows.unlink()
                continue  # someone else took this number first: take the next one
            rd.seal_written(rows.relative_to(rd.path).as_posix(), side.sha256)  # hashed as it was written
            rd.seal(target.relative_to(rd.path).as_posix())
            return target
    finally:
        tmp.unlink(missing_ok=True)
    raise RunDirError(f"{rd.path / SCORES}: could not find a free score number")


def read_score(path: Path | str) -> ScoreDocument:
    """Read one score file (files written before the typed document load unchanged)."""
    p = Path(path)
    try:
        doc = ScoreDocument.model_validate_json(p.read_bytes())
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        raise IntegrityError(f"{p}: not a readable score document: {where}: {first['msg']}") from None
    return doc.located(p.parent)
