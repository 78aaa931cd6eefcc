"""Score a run directory: check integrity, stream the results, fold trials, aggregate.

The scorer reads only the run directory and never runs anything. Every result file it reads is
hashed from the very bytes it parsed, so the score names exactly the evidence it stands on.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

from assay.errors import IntegrityError, RunDirError
from assay.records.manifest import RunManifest, TaskRecord
from assay.records.scores import SCORE_SCHEMA, ScoreDocument, TrialsFile
from assay.records.scores import SuspectPass
from assay.records.trial_file import TrialWriter
from assay.run_budget.log import last_stop
from assay.score.perf import with_performance
from assay.score.capability import DEFAULT_WEIGHTS
from assay.score.controls import control_origins, control_summary
from assay.score.fold_child import FoldChild, fold_in_child
from assay.score.folding import FoldOutcome, ScoreInputs, Screened, TrialFolder, fold_files, fold_read
from assay.score.labels import read_labels
from assay.score.measured import measured_of, typed_document
from assay.score.screen import Suspect, as_records
from assay.score.trial_sight import LOAD as SIGHT_LOAD
from assay.score.trial_sight import screen_read
from assay.score.trials import TrialFacts, missing_trial
from assay.spec.digest import sha256_file, sha256_json
from assay.store.fastread import Attempt
from assay.store.integrity import refusal, require_intact
from assay.store.rundir import MANIFEST, RunDir
from assay.store.scan import RunScan, TrialRead

#: how a scan reads a trial folder for the scorer: its files and, from the same bytes, its trace's facts
#: and the screen (score/trial_sight.py), in the reading processes of a large run
TRIAL_LOAD = SIGHT_LOAD
#: bump when a rule changes; the rules digest changes with any edit of the scorer's code anyway
SCORER_VERSION = "1.2.0"  # 1.1: category figures combined unrounded; 1.2: per-turn verdicts and pass^k of conversations
__all__ = ["SCORE_SCHEMA", "SCORER_VERSION", "ScoreDocument", "check_integrity", "score_figures", "score_run",
           "score_trials", "scored_to_side_file"]


def rules_digest(category_weights: dict[str, float], capability_weights: dict[str, float]) -> str:
    """Digest of the rules: the scorer's own source files and the frozen weights it applied."""
    h = hashlib.sha256()
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(sha256_json({"categories": category_weights, "capability": capability_weights}).encode())
    return h.hexdigest()


def isolation_note(manifest: RunManifest) -> dict[str, Any]:
    sb = manifest.sandbox
    warning = None
    if not sb.isolated:
        warning = (f"NOT ISOLATED: this run used the '{sb.backend}' sandbox backend without isolation; "
                   "security results do not show what the agent would do inside a sandbox")
    return {"isolated": sb.isolated, "backend": sb.backend, "network": sb.network.value, "warning": warning}


def capability_weights(manifest: RunManifest) -> dict[str, float]:
    w = manifest.score.get("capability_weights") if isinstance(manifest.score, dict) else None
    return dict(w) if isinstance(w, dict) and w else dict(DEFAULT_WEIGHTS)


def score_trials(manifest: RunManifest, trials: Iterable[TrialFacts], *, keep_trials: bool = True,
                 inputs: ScoreInputs | None = None, writer: TrialWriter | None = None) -> ScoreDocument:
    """The scoring core: fold trial facts into the score document (both the run-dir path and the
    benchmark feed this function). The aggregator's plain output becomes the typed document here,
    at the scorer's boundary. With a ``writer``, each trial row goes to the side file as it is
    folded, with the evidence files it was scored from (``inputs``' entries for it), and neither
    rows nor per-trial inputs nor task rows' trial ids stay in memory or in the document."""
    folder = TrialFolder(control_origins(manifest), keep_trials=keep_trials, writer=writer)
    inputs = inputs or ScoreInputs()
    for t in trials:
        folder.add(t, inputs)
    return score_document(manifest, folder.finish(dict(manifest.categories), capability_weights(manifest)), inputs)


def score_document(manifest: RunManifest, out: FoldOutcome, inputs: ScoreInputs) -> ScoreDocument:
    """The typed document of a fold's outcome (folded here or in a process of its own)."""
    cw, capw = dict(manifest.categories), capability_weights(manifest)
    return typed_document(manifest, {
        "isolation": isolation_note(manifest),
        "schema": SCORE_SCHEMA,
        "scorer_version": SCORER_VERSION,
        "rules_digest": rules_digest(cw, capw),
        "run_id": manifest.run_id,
        "suite": {k: manifest.suite.get(k) for k in ("name", "version", "digest") if k in manifest.suite},
        "scored_at": time.time(),
        "weights": {"categories": cw, "capability": capw},
        "inputs": {"manifest_sha256": inputs.manifest_sha256, "results": inputs.results, "traces": inputs.traces,
                   "result_files": out.n_results + len(inputs.results),
                   "trace_files": out.n_traces + len(inputs.traces)},
        "measured": measured_of(manifest, incomplete=out.cut, contended=out.contended),
        "security": out.body["security"],
        "agents": out.body["agents"],
        "tasks": out.body["tasks"],
        "trials": out.rows,
        "recovery": out.recovery,
        "controls": control_summary(manifest, out.control_trials),
        "deviations": task_deviations(manifest.tasks),
    })


def task_deviations(tasks: Iterable[TaskRecord]) -> dict[str, list[str]]:
    """Per task, what assay read differently from what it declared: the task's own flags (an
    import's) and then its image's (a hand-written Dockerfile's ``FROM`` mapped to a Debian base
    lives only there), each once, so the report never leaves a mapping silent."""
    out: dict[str, list[str]] = {}
    for t in tasks:
        flags = list(t.deviations)
        for d in (t.environment.deviations if t.environment is not None else []):
            if d not in flags:
                flags.append(d)
        if flags:
            out[t.id] = flags
    return out


def plan_reads(rd: RunDir, manifest: RunManifest,
               scan: RunScan) -> Iterator[tuple[str, TrialRead, None] | tuple[str, None, TrialFacts]]:
    """(trial id, as read, None), or (trial id, None, its row as missing) for a trial without a
    result, of every trial in the plan's order (unplanned trials found on disk follow); a planned
    trial the run budget stopped before it started is missing with reason ``run_budget``."""
    stop = last_stop(rd)
    budget_pending = set(stop.get("pending") or []) if stop else set()
    categories = {t.id: t.category for t in manifest.tasks}
    for tid, read in scan.read_in_order(manifest.plan.trials):
        if read is None or not read.attempts:
            yield tid, None, missing_trial(tid, categories, "run_budget" if tid in budget_pending else "missing")
        else:
            yield tid, read, None


def iter_run_trials(rd: RunDir, manifest: RunManifest, inputs: ScoreInputs,
                    scan: RunScan | None = None, screened: list[Screened] | None = None) -> Iterator[TrialFacts]:
    """Stream the run's trials, folded, in the order of :func:`plan_reads`. With a checking
    ``scan``, every trial folder is checked as it is read (see :func:`score_run`). With
    ``screened``, every passing attempt is screened as it is read (the reward-hack screen,
    :func:`assay.score.screen.screen_run`, in the same pass) and its suspects appended, each with
    its place in screen_run's order (trial folder, then attempt folder: not the ids a result
    claims, which a result copied into another folder does not change)."""
    scan = scan or RunScan(rd, verify=False, load=TRIAL_LOAD)
    for tid, read, missing in plan_reads(rd, manifest, scan):
        yield missing if read is None else fold_read(rd, tid, read, inputs, screened)


def fold_on_disk(rd: RunDir, trial_id: str, attempts: list[Attempt],
                 inputs: ScoreInputs | None = None) -> TrialFacts:
    """One trial's facts from its attempts, its final attempt's trace and its artifacts on disk (the
    one fold every reader of a run uses: the scorer, and the exports that must agree with it)."""
    artifacts_ok = all(rd.artifact_path(d).exists() for a in attempts for d in a.artifacts.values())
    return fold_files(rd, trial_id, attempts, inputs, artifacts_ok=artifacts_ok, has_trace=True, trace_digest=None)


def check_integrity(path: Path | str) -> None:
    """Refuse to score evidence that changed after it was written (exit code 3)."""
    require_intact(path, action="score")


def score_run(path: Path | str | RunDir, *, keep_trials: bool = True, verify: bool = True,
              writer: TrialWriter | None = None, workers: int | None = None,
              fold_apart: bool | None = None) -> ScoreDocument:
    """Score a run directory in memory (nothing is written but the ``writer``'s side file: with
    one, the trial rows stream into it instead of the document, see :func:`score_trials`).

    With ``verify``, each trial folder is checked as it is read (one read of every file: hashed
    and parsed from the same bytes) and the rest of the run after the last trial; any problem
    refuses the score with the very report `assay verify` gives, as does anything that fails
    while reading a run whose evidence changed. The trial folders are read (listed, read, hashed)
    by ``workers`` processes (None: one per core for a large run, or ``ASSAY_SCAN_WORKERS``); the
    checking and parsing stay here, in the plan's order. With a ``writer``, a large run's trials
    are folded in a process of its own meanwhile (``fold_apart`` None: by size, see
    :mod:`assay.score.fold_child`), by the same code, so every figure is the same."""
    rd = RunDir.open(path)
    try:
        manifest = rd.manifest()
    except (IntegrityError, RunDirError):
        if verify:
            check_integrity(rd.path)  # the full report when the run fails its check
        raise
    inputs = ScoreInputs(manifest_sha256=sha256_file(rd.path / MANIFEST))
    scan = RunScan(rd, verify=verify, workers=workers, load=TRIAL_LOAD, outputs=False)  # older scores: verify's
    screened: list[Screened] = []
    try:
        planned = len(manifest.plan.trials)
        readers = scan.readers(planned) if fold_apart is None else 0
        if writer is not None and fold_in_child(planned, fold_apart, readers=readers):
            doc = _score_apart(rd, manifest, scan, inputs, writer, screened)
        else:
            doc = score_trials(manifest, iter_run_trials(rd, manifest, inputs, scan, screened),
                               keep_trials=keep_trials, inputs=inputs, writer=writer)
    except Exception:
        if verify:
            check_integrity(rd.path)
        raise
    _checked, problems = scan.finish()
    if problems:
        raise refusal(rd.path, problems, action="score")
    screened.sort(key=lambda x: x[0])  # screen_run's order: trial folder, then attempt folder
    return with_performance(_audited(doc, rd, [x for _place, x in screened]), rd.path)


def scored_to_side_file(run_dir: Path | str | RunDir, folder: Path, *, verify: bool = True) -> ScoreDocument:
    """Score a run with its trial rows streamed into ``folder/trials.jsonl``, none held in memory
    (a large run's folded by a process of its own): the document reads them back from there
    (:func:`assay.records.trial_file.iter_trials`) for as long as ``folder`` lasts. What a command
    that only shows a score, or writes its CI outputs, scores with (not a score version)."""
    writer = TrialWriter(folder / "trials.jsonl")
    try:
        doc = score_run(run_dir, writer=writer, verify=verify)
    except BaseException:
        writer.abort()
        raise
    side = TrialsFile(path=writer.path.name, rows=writer.rows, sha256=writer.close())
    return doc.model_copy(update={"trials_file": side}).located(folder)


def score_figures(run_dir: Path | str | RunDir, *, verify: bool = True) -> ScoreDocument:
    """A run's figures alone (agents, tasks, security, recovery...), for a command that shows or
    compares them: its trial rows and the evidence digests they carry stream into a temporary side
    file, removed on return, so neither is held (without a side file the digests alone were 300 MB
    at 10^6 trials). The document has no rows."""
    with tempfile.TemporaryDirectory(prefix="assay-figures-") as tmp:
        doc = scored_to_side_file(run_dir, Path(tmp), verify=verify)
    return doc.model_copy(update={"trials_file": None}).located(None)


def _score_apart(rd: RunDir, manifest: RunManifest, scan: RunScan, inputs: ScoreInputs, writer: TrialWriter,
                 screened: list[Screened]) -> ScoreDocument:
    """:func:`score_trials` of :func:`iter_run_trials`, the folding done by a child process (its
    side file written there, adopted by ``writer``) while this one scans."""
    child = FoldChild(rd.path, writer.path, control_origins(manifest), dict(manifest.categories),
                      capability_weights(manifest))
    try:
        for tid, read, missing in plan_reads(rd, manifest, scan):
            if read is None:
                child.missing(missing)
            else:  # screened here, as it was read: the folding process has the most to do
                screened.extend(((tid, k), x) for k, x in screen_read(rd, tid, read))
                child.trial(tid, read)
        outcome, rows, digest = child.finish()
    except BaseException:
        child.abort()
        raise
    writer.adopt(rows, digest)
    return score_document(manifest, outcome, inputs)


def _audited(doc: ScoreDocument, rd: RunDir, screened: list[Suspect]) -> ScoreDocument:
    """The screen's suspect passes (they stay passes) with a person's labels, and per labelled
    agent the strict rate with its false passes counted as failures, beside the raw one."""
    labels = read_labels(rd.path)
    suspects = [SuspectPass(**s, **{k: v for k, v in labels.get(s["trial_id"], {}).items() if k != "file"})
                for s in as_records(screened)]
    if not suspects:
        return doc
    audited: dict[str, float | None] = {}
    for agent in sorted({s.agent for s in suspects if s.label}):
        a = doc.agents.get(agent)
        false = sum(1 for s in suspects if s.agent == agent and s.label == "false_pass")
        audited[agent] = round((a.passes - false) / a.scored, 6) if a is not None and a.scored else None
    return doc.model_copy(update={"suspect_passes": suspects, "audited_strict": audited})
