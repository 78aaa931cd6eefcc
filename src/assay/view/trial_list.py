"""One page of a run's trials: from the derived index (``index.sqlite``, `assay index`) when it
exists, else from the latest score version; the final attempt of each trial."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from assay.records.scores import ScoreDocument
from assay.records.trial_file import iter_trials
from assay.store.rundir import INDEX

PER_PAGE = 200


@dataclass(frozen=True)
class TrialLine:
    trial_id: str
    agent: str
    category: str
    end_state: str
    attempts: int


def trial_rows(run: Path, offset: int, limit: int = PER_PAGE) -> tuple[list[TrialLine], int]:
    """(a page of trials, how many there are) from the run's index, read-only."""
    con = sqlite3.connect(f"file:{run / INDEX}?mode=ro", uri=True)
    try:
        total = con.execute("SELECT COUNT(DISTINCT trial_id) FROM attempts").fetchone()[0]
        rows = con.execute(
            "SELECT a.trial_id, a.agent, a.category, a.end_state, a.attempt FROM attempts a "
            "JOIN (SELECT trial_id, MAX(attempt) AS n FROM attempts GROUP BY trial_id) l "
            "ON a.trial_id = l.trial_id AND a.attempt = l.n ORDER BY a.trial_id LIMIT ? OFFSET ?",
            (limit, offset)).fetchall()
    except sqlite3.Error:
        return [], 0
    finally:
        con.close()
    return [TrialLine(*r) for r in rows], total


def trial_rows_of(doc: ScoreDocument | None, offset: int, limit: int = PER_PAGE) -> tuple[list[TrialLine], int]:
    if doc is None:
        return [], 0
    page, total = [], 0  # rows stream from the score's side file: one pass, one page kept
    for t in iter_trials(doc):
        if offset <= total < offset + limit:
            page.append(TrialLine(t.trial_id, t.agent, t.category, t.end_state, t.attempts))
        total += 1
    return page, total
