"""Which trials the HTML report details: all of them up to a limit, and beyond it the ones the
report links to (incidents, suspect passes) first, then the rest in the scorer's order, so a
report of 10^6 trials stays a file a browser opens, and every link in it lands on a section.

The rows are read once through the one reader (:func:`assay.records.trial_file.iter_trials_where`);
only the detailed ones are decoded whole and kept.
"""

from __future__ import annotations

from assay.records.scores import ScoreDocument, TrialScore
from assay.records.trial_file import iter_trials_where

#: trial sections an HTML report holds at most (each reads its results and trace from disk)
DETAIL_LIMIT = 2000


def linked_trials(doc: ScoreDocument) -> set[str]:
    """Trial ids the report's tables link to: incidents, warnings and suspect passes."""
    ids = {s.trial_id for s in doc.suspect_passes}
    for g in [doc.security, *(a.security for a in doc.agents.values())]:
        ids |= {str(i.trial_id) for i in [*g.incidents, *g.warnings] if i.trial_id}
    return ids


def detailed_rows(doc: ScoreDocument, limit: int = DETAIL_LIMIT) -> tuple[list[TrialScore], int]:
    """(the rows to detail in the scorer's order, how many rows there are in all). Only those rows
    are decoded whole; of the others only the trial id is read, to find the linked ones."""
    linked = linked_trials(doc)
    kept: list[TrialScore] = []
    others = 0
    total = 0
    for tid, row in iter_trials_where(doc, lambda tid: tid in linked or others < limit):
        total += 1
        if row is None:
            continue
        if tid in linked:
            kept.append(row)
        elif others < limit:
            kept.append(row)
            others += 1
    return kept, total


def unit_links(rows: list[TrialScore]) -> dict[tuple[str, str, str], list[str]]:
    """Per (agent, task, variant): the detailed trials' ids, for the task rows' links."""
    out: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        out.setdefault((r.agent, r.task_id, r.variant), []).append(r.trial_id)
    return out
