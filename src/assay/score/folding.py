"""Folding a run's trials into the score's figures: each trial as a scan read it into its row
(:func:`fold_read`), and the rows into the aggregates and the side file (:class:`TrialFolder`).

The same code folds in the scoring process and, for a large run, in a process of its own beside
the scan (:mod:`assay.score.fold_child`), so every figure is the same wherever it was folded.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from assay.records.trial_file import TrialWriter
from assay.score.aggregate import Aggregator
from assay.score.evidence import read_trace_facts
from assay.score.screen import Suspect
from assay.score.trial_sight import TrialSight, screen_read, sight_of
from assay.score.trials import TrialFacts, fold_trial
from assay.spec.digest import sha256_file
from assay.store.fastread import Attempt
from assay.store.rundir import TRIALS, RunDir
from assay.store.scan import TrialRead
from assay.store.scan_read import TRACE

#: a suspect pass with its place in screen_run's order: (trial folder, attempt's place in it)
Screened = tuple[tuple[str, int], Suspect]


@dataclass
class ScoreInputs:
    """What the scorer read, by digest."""

    manifest_sha256: str = ""
    results: dict[str, str] = field(default_factory=dict)
    traces: dict[str, str] = field(default_factory=dict)


def fold_read(rd: RunDir, tid: str, read: TrialRead, inputs: ScoreInputs,
              screened: list[Screened] | None) -> TrialFacts:
    """One trial as a scan read it, folded; its evidence files noted in ``inputs`` and, with
    ``screened``, its passing attempts screened (the reward-hack screen, in the same pass)."""
    for rel, digest in read.result_digests:
        inputs.results[rel] = digest
    if screened is not None:
        screened.extend(((tid, k), x) for k, x in screen_read(rd, tid, read))
    return fold_files(rd, tid, read.attempts, inputs, artifacts_ok=read.artifacts_ok, has_trace=read.has_trace,
                      trace_digest=read.trace_digest, sight=sight_of(read))


def fold_files(rd: RunDir, trial_id: str, attempts: list[Attempt], inputs: ScoreInputs | None, *,
               artifacts_ok: bool, has_trace: bool, trace_digest: str | None,
               sight: TrialSight | None = None) -> TrialFacts:
    """One trial's facts from its attempts and its final attempt's trace (as the scan's reading saw
    it, else read here)."""
    facts = None
    if sight is not None and sight.trace is not None and trace_digest is not None:
        # the trace as the scan read it: its facts and its digest from the same bytes
        facts = sight.trace.facts_of(max(a.attempt for a in attempts))
        if inputs is not None:
            inputs.traces[f"{TRIALS}/{trial_id}/{TRACE}"] = trace_digest
    elif has_trace:
        trace_path = rd.trace_path(trial_id)
        facts = read_trace_facts(trace_path, max(a.attempt for a in attempts))
        if facts is not None and inputs is not None:
            inputs.traces[trace_path.relative_to(rd.path).as_posix()] = trace_digest or sha256_file(trace_path)
    return fold_trial(attempts, artifacts_ok=artifacts_ok, trace=facts)


@dataclass
class FoldOutcome:
    """Everything of a score document the trials gave, but the inputs' digests: plain data, so a
    fold in another process hands it back whole."""

    body: dict[str, Any]  # Aggregator.finish: security, agents, tasks
    recovery: dict[str, Any]
    cut: int  # trials the run budget left unfinished
    contended: int  # timeouts taken while the host was overloaded
    control_trials: list[TrialFacts]
    n_results: int  # evidence files streamed out with their trial's row
    n_traces: int
    rows: list[TrialFacts]  # kept in the document (no side file)


class TrialFolder:
    """The score's fold of trial rows: controls set aside, every other row aggregated and, with a
    ``writer``, streamed to the side file with the evidence it was scored from (``inputs``' entries,
    emptied after each row), else kept when ``keep_trials``."""

    def __init__(self, controls: Container[str], *, keep_trials: bool, writer: TrialWriter | None) -> None:
        self.controls, self.keep_trials, self.writer = controls, keep_trials, writer
        self.agg = Aggregator(keep_trial_ids=keep_trials and writer is None)
        self.rows: list[TrialFacts] = []
        self.control_trials: list[TrialFacts] = []
        self.cut = self.contended = self.n_results = self.n_traces = 0

    def add(self, t: TrialFacts, inputs: ScoreInputs) -> None:
        if t.task_id in self.controls:  # beside the capability score, never inside it (score/controls.py)
            self.control_trials.append(t)
            return
        self.agg.add(t)
        self.cut += t.reason == "run_budget"
        self.contended += t.host_contended
        if self.writer is not None:
            self.writer.write(t, inputs.results, inputs.traces)
            self.n_results += len(inputs.results)
            self.n_traces += len(inputs.traces)
            inputs.results.clear()
            inputs.traces.clear()
        elif self.keep_trials:
            self.rows.append(t)

    def finish(self, category_weights: dict[str, float], capability_weights: dict[str, float]) -> FoldOutcome:
        body = self.agg.finish(category_weights, capability_weights)
        return FoldOutcome(body=body, recovery=self.agg.figures.dump() if self.agg.figures is not None else {},
                           cut=self.cut, contended=self.contended, control_trials=self.control_trials,
                           n_results=self.n_results, n_traces=self.n_traces, rows=self.rows)


__all__ = ["FoldOutcome", "ScoreInputs", "Screened", "TrialFolder", "fold_files", "fold_read"]
