"""Held-out tasks outside the run directory: they count in every aggregate, but their per-trial
rows, traces and incident evidence are withheld, and their ids are never shown (a task's id can
itself tell the case: ``refund-after-fake-receipt``). Their prompts and expected values must never
leave the run directory in clear (docs/production-loop.md). Which tasks are held out is recorded in
the run manifest (``TaskRecord.held_out``), so a report needs nothing but the run directory.

Where a row must stay to be counted (the report's task rows, the export's rows, JUnit's test
cases, a judge's verdicts) a held-out task's id, its variant's id and its trials' ids are shown as
digests (:func:`task_label`, :func:`trial_label`): stable across runs, so two runs still pair, and
saying nothing of the case."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.report.controls import withhold_controls
from assay.records.scores import GateIncident, ScoreDocument, SecurityGate, TrialScore
from assay.records.trial_id import parse_trial_id
from assay.spec.digest import sha256_json
from assay.spec.judge import JudgeSummary
from assay.store.rundir import RunDir

if TYPE_CHECKING:  # a type only: a run's score never builds a comparison (records/comparison.py, 12 ms)
    from assay.records.comparison import Comparison

WITHHELD = "held-out task: details withheld"
#: how every shown id of a held-out task begins
PREFIX = "held-out-"


def _digest(kind: str, value: str) -> str:
    return hashlib.sha256(f"assay.held-out/{kind}/{value}".encode()).hexdigest()[:12]


def task_label(task_id: str) -> str:
    """A held-out task's id as shown: a digest of it."""
    return PREFIX + _digest("task", task_id)


def variant_label(task_id: str, variant: str) -> str:
    """A held-out task's variant as shown (``base`` says nothing and stays)."""
    return variant if variant == "base" else "v-" + _digest("variant", f"{task_id}/{variant}")


def trial_label(trial_id: str, held: frozenset[str]) -> str:
    """A trial id as shown: ``task.variant.agent.rN`` with a held-out task's and variant's ids as
    digests (agent and repetition stay); any other trial's id unchanged."""
    task, _, rest = trial_id.partition(".")
    if task not in held:
        return trial_id
    variant, _, tail = rest.partition(".")
    return ".".join(p for p in (task_label(task), variant_label(task, variant) if variant else "", tail) if p)


def held_out_of(run_dir: Path | str | RunDir) -> frozenset[str]:
    """The held-out task ids of a run (from its manifest; a RunDir given reads it once for all)."""
    return RunDir.open(run_dir).manifest().held_out_ids()


def is_label(task_id: str) -> bool:
    return task_id.startswith(PREFIX)


def _held_trial(trial_id: str | None, held: frozenset[str]) -> bool:
    if not trial_id:
        return False
    try:
        return parse_trial_id(trial_id)[0] in held
    except ValueError:
        return False


def _incident(i: GateIncident, held: frozenset[str]) -> GateIncident:
    if not _held_trial(i.trial_id, held):
        return i
    return i.model_copy(update={"summary": WITHHELD, "evidence": {"sha256": sha256_json(i.evidence)},
                                "trial_id": trial_label(i.trial_id or "", held)})


def _gate(g: SecurityGate, held: frozenset[str]) -> SecurityGate:
    return g.model_copy(update={"incidents": [_incident(i, held) for i in g.incidents],
                                "warnings": [_incident(i, held) for i in g.warnings]})


def _trial(t: TrialScore, held: frozenset[str]) -> TrialScore:
    return replace(t, trial_id=trial_label(t.trial_id, held), task_id=task_label(t.task_id),
                   variant=variant_label(t.task_id, t.variant))


def _path(rel: str, held: frozenset[str]) -> str:
    """A run-directory path (``trials/<trial id>/...``) with a held-out trial's id as its label."""
    head, sep, rest = rel.partition("/")
    if head != "trials" or not sep:
        return rel
    tid, sep, tail = rest.partition("/")
    return f"trials/{trial_label(tid, held)}{sep}{tail}"


def withhold(doc: ScoreDocument, held: frozenset[str], *, keep_trials: bool = False) -> ScoreDocument:
    """The score document a report may show: held-out tasks' trial rows dropped (``keep_trials``:
    kept under digest labels, for outputs that count test cases), their task rows, incidents and
    input file names under digest labels (task rows without trial ids), their incidents' evidence
    as a digest. Aggregates are unchanged. Rows are withheld as they are read
    (:func:`assay.records.trial_file.iter_trials`), wherever they are."""
    if not held:
        return doc
    agents = {name: a.model_copy(update={"security": _gate(a.security, held)}) for name, a in doc.agents.items()}
    tasks = [r.model_copy(update={"trial_ids": [], "task": task_label(r.task),
                                  "variant": variant_label(r.task, r.variant)}) if r.task in held else r
             for r in doc.tasks]
    inputs = doc.inputs.model_copy(update={"results": {_path(k, held): v for k, v in doc.inputs.results.items()},
                                           "traces": {_path(k, held): v for k, v in doc.inputs.traces.items()}})
    suspects = [s for s in doc.suspect_passes if s.task_id not in held]  # their evidence would show the task

    def keep(t: TrialScore) -> TrialScore | None:
        if t.task_id not in held:
            return t
        return _trial(t, held) if keep_trials else None

    trials = [k for t in doc.trials if (k := keep(t)) is not None]
    out = doc.model_copy(update={"trials": trials, "tasks": tasks, "inputs": inputs,
                                 "security": _gate(doc.security, held), "agents": agents,
                                 "suspect_passes": suspects,
                                 "controls": withhold_controls(doc.controls, held, task_label),
                                 "deviations": {k: v for k, v in doc.deviations.items() if k not in held}})
    return out.filtered(keep) if doc.trials_file is not None else out


def withhold_comparison(cmp: Comparison | None, held: frozenset[str]) -> Comparison | None:
    """A comparison's flipped and left-out units with held-out tasks under digest labels."""
    if cmp is None or not held:
        return cmp

    def unit(u: Any) -> Any:
        return u.model_copy(update={"task": task_label(u.task), "variant": variant_label(u.task, u.variant)}) \
            if u.task in held else u

    return cmp.model_copy(update={"flipped": [unit(f) for f in cmp.flipped],
                                  "left_out": [unit(x) for x in cmp.left_out]})


def withhold_judges(judges: list[JudgeSummary], held: frozenset[str]) -> list[JudgeSummary]:
    """Judge summaries whose verdicts on held-out tasks carry digest labels (still counted)."""
    if not held:
        return judges
    return [s.model_copy(update={"verdicts": [
        v.model_copy(update={"task_id": task_label(v.task_id), "trial_id": trial_label(v.trial_id, held)})
        if v.task_id in held else v for v in s.verdicts]}) for s in judges]


def withhold_row(row: dict[str, Any], held: frozenset[str]) -> dict[str, Any]:
    """An export row (``assay.results/1``) with a held-out task's ids as digest labels."""
    task = row.get("task_id")
    if not held or task not in held:
        return row
    return {**row, "trial_id": trial_label(str(row["trial_id"]), held), "task_id": task_label(task),
            "variant": variant_label(task, str(row.get("variant") or ""))}


def withheld_note(doc: ScoreDocument, held: frozenset[str]) -> str | None:
    """One sentence for the reader: how many trials are counted but not shown (of the document
    before :func:`withhold`)."""
    if not held:
        return None
    n = sum(r.n + r.skipped for r in doc.tasks if r.task in held)  # every trial is in one task row
    return (f"{len(held)} held-out task(s) ({n} trial(s)) are counted in the figures above; their prompts, traces, "
            f"per-trial rows and ids are withheld (ids shown as {PREFIX}… digests).")
