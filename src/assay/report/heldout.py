"""Held-out tasks in reports: they count in every aggregate, but their per-trial rows, traces and
incident evidence are withheld (their prompts and expected values must never leave the run
directory in clear; docs/production-loop.md). Which tasks are held out is recorded in the run
manifest (``TaskRecord.held_out``), so a report needs nothing but the run directory."""

from __future__ import annotations

from assay.spec.digest import sha256_json
from assay.spec.scores import GateIncident, ScoreDocument, SecurityGate

WITHHELD = "held-out task: details withheld"


def _incident(i: GateIncident, held_trials: set[str]) -> GateIncident:
    if i.trial_id not in held_trials:
        return i
    return i.model_copy(update={"summary": WITHHELD, "evidence": {"sha256": sha256_json(i.evidence)}})


def _gate(g: SecurityGate, held_trials: set[str]) -> SecurityGate:
    return g.model_copy(update={"incidents": [_incident(i, held_trials) for i in g.incidents],
                                "warnings": [_incident(i, held_trials) for i in g.warnings]})


def withhold(doc: ScoreDocument, held: frozenset[str]) -> ScoreDocument:
    """The score document a report may show: held-out tasks' trial rows dropped, their task rows
    without trial ids, their incidents' evidence as a digest. Aggregates are unchanged."""
    if not held:
        return doc
    held_trials = {t.trial_id for t in doc.trials if t.task_id in held}
    held_trials |= {tid for row in doc.tasks if row.task in held for tid in row.trial_ids}
    agents = {name: a.model_copy(update={"security": _gate(a.security, held_trials)}) for name, a in doc.agents.items()}
    return doc.model_copy(update={
        "trials": [t for t in doc.trials if t.task_id not in held],
        "tasks": [r.model_copy(update={"trial_ids": []}) if r.task in held else r for r in doc.tasks],
        "security": _gate(doc.security, held_trials), "agents": agents})


def withheld_note(doc: ScoreDocument, held: frozenset[str]) -> str | None:
    """One sentence for the reader: how many trials are counted but not shown (of the document
    before :func:`withhold`)."""
    if not held:
        return None
    n = sum(1 for t in doc.trials if t.task_id in held)
    return (f"{len(held)} held-out task(s) ({n} trial(s)) are counted in the figures above; their prompts, traces "
            "and per-trial rows are withheld.")
