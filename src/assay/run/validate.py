"""``assay validate``: a suite is valid only if the oracle passes every task and the
do-nothing agent fails every task (law 7). A verifier that passes untouched state checks
nothing, and a task its own reference solution cannot pass is broken.

With ``mutants``, every state mutant of the oracle's end state must fail too
(:mod:`assay.verify.mutants`): a verifier that passes an almost-right end state is weak."""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from assay.records.manifest import GatewayRecord
from assay.records.results import AttemptResult, EndState, Trust
from assay.run.runner import RunOptions, start_run
from assay.spec.budget import NetworkProfile
from assay.spec.load import LoadedSuite, LoadedTask, load_suite
from assay.verify import verifier
from assay.verify.lint import lint_task
from assay.verify.mutants import MutantResult, Recorder, try_mutants
from assay.verify.registry import trust_of


@dataclass
class TaskVerdict:
    task_id: str
    variant: str
    oracle: AttemptResult | None = None
    nop: AttemptResult | None = None
    problems: list[str] = field(default_factory=list)
    trust: dict[str, str] = field(default_factory=dict)  # predicate id -> trust level
    mutants: list[MutantResult] = field(default_factory=list)

    @property
    def trust_summary(self) -> str:
        """e.g. ``state:2 in_process:1`` (one figure, shown by validate and the docs' example)."""
        counts = Counter(self.trust.values())
        return " ".join(f"{t}:{counts[t]}" for t in Trust if counts[t])

    @property
    def survivors(self) -> list[MutantResult]:
        """The mutants that passed and count: not those of a file the task never asks for."""
        return [m for m in self.mutants if m.survived and not m.unasked]

    @property
    def unasked(self) -> list[MutantResult]:
        """Survivors of a file the reference solution wrote for itself (shown, not counted)."""
        return [m for m in self.mutants if m.survived and m.unasked]

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class ValidationReport:
    suite: str
    verdicts: list[TaskVerdict]
    run_dir: Path | None = None

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)

    @property
    def invalid(self) -> list[TaskVerdict]:
        return [v for v in self.verdicts if not v.ok]


def _oracle_problems(r: AttemptResult) -> list[str]:
    if r.end_state is EndState.passed:
        return []
    if r.end_state is EndState.skipped:
        return [f"oracle skipped: {r.reason} (add a reference solution at solution/solve.sh)"]
    if r.end_state is EndState.infra_error:
        return [f"oracle run hit an infrastructure error ({r.reason}): {tail('; '.join(r.errors))}"]
    if r.end_state is EndState.timeout:
        return ["oracle timed out: the reference solution does not finish within the wall-time budget"]
    failed = [p for p in r.predicates if p.required and not p.passed]
    return [f"oracle fails predicate {p.id!r} ({p.kind}): {_short(p.evidence)}" for p in failed] or ["oracle failed"]


def _nop_problems(r: AttemptResult) -> list[str]:
    if r.end_state is EndState.passed:
        held = [p.id for p in r.predicates if p.required and p.passed]
        return [f"nop passes: required predicate(s) {held} hold on untouched state, so the verifier checks nothing the agent must do"]
    if r.end_state is EndState.infra_error:
        return [f"nop run hit an infrastructure error ({r.reason}): {tail('; '.join(r.errors))}"]
    return []


def tail(text: str, lines: int = 12, chars: int = 1500) -> str:
    """The end of an error text, where a crash states its cause (a traceback's last line), with
    the start of its first line kept so the reader sees what crashed."""
    all_lines = text.rstrip().splitlines()
    if len(all_lines) <= lines and len(text) <= chars:
        return text.rstrip()
    end = "\n".join(all_lines[-lines:])[-chars:]
    return f"{all_lines[0][:200]} ... [{len(all_lines)} lines, last {lines} shown]\n{end}"


def _short(evidence: dict) -> str:
    text = ", ".join(f"{k}={v!r}" for k, v in evidence.items() if k not in ("content", "output", "stdout", "stderr"))
    return text[:300]


def trust_levels(task: LoadedTask) -> dict[str, str]:
    """Every predicate's trust level, a conversation's per-turn predicates included."""
    conv = task.spec.conversation
    turns = [p for ps in conv.turn_predicates().values() for p in ps] if conv is not None else []
    return {p.id: trust_of(p.kind).value for p in [*task.spec.predicates, *turns]}  # type: ignore[attr-defined]


def simulator_model(suite: LoadedSuite) -> str | None:
    """A suite with a model-driven user is validated with that user scripted (the oracle and nop
    never call a model; the simulated user must still speak)."""
    return "scripted" if any(t.spec.conversation is not None and t.spec.conversation.simulator is not None
                             for t in suite.tasks) else None


def judge_problems(task: LoadedTask, judge: GatewayRecord | None) -> list[str]:
    """Every judge predicate of ``task`` (final or in a conversation turn, named by its field)
    whose judge may not gate with the run's judge model: its calibration is missing, stale, below
    its thresholds or unreadable."""
    if judge is None:  # no judge model: nothing to hold, and the judge's modules stay unimported
        return []
    from assay.judge.calibrate import load_judge
    from assay.judge.gate import calibration_status
    from assay.judge.uses import judge_uses

    out = []
    for use in judge_uses(task.spec):
        p, code = use.check, task.dir / task.spec.verify_dir
        where = use.field + (f" (turn {use.turn})" if use.turn is not None else "")
        status = calibration_status(load_judge(code / p.judge), judge.model or "", judge.backend, code / p.calibration)
        if not status.may_gate:
            out.append(f"judge predicate {p.id!r} ({where} of task.yaml, judge {task.spec.verify_dir}/{p.judge}) "
                       f"is {status.label} for model {judge.model!r}: {'; '.join(status.reasons)} (fix: assay judge "
                       f"calibrate SET --judge {task.spec.verify_dir}/{p.judge} --model MODEL "
                       f"-o {task.spec.verify_dir}/{p.calibration})")
    return out


def validate_suite(suite_path: Path, *, sandbox: str | None = None, keep: Path | None = None, jobs: int = 1,
                   mutants: bool = False, judge_model: str | None = None,
                   tasks: list[str] | None = None) -> ValidationReport:
    """Run oracle and nop over every task and variant (or only ``tasks``); report every task where
    either misbehaves (and, with ``mutants``, every mutant of the oracle's end state that the
    verifier lets pass). A task with judge predicates needs ``judge_model``, and a judge calibrated
    for it."""
    suite = load_suite(suite_path)
    with tempfile.TemporaryDirectory(prefix="assay-validate-") as tmp:
        out = keep or Path(tmp) / "run"
        recorder = Recorder(Path(tmp) / "oracle-states")
        if mutants:
            verifier.OBSERVERS.append(recorder)
        try:
            outcome = start_run(RunOptions(suite=suite_path, agents=["oracle", "nop"], out=out, sandbox=sandbox,
                                           network=NetworkProfile.harness, max_retries=0, jobs=jobs,
                                           model=simulator_model(suite), tasks=tasks,
                                           run_id=f"validate-{suite.spec.name}", judge_model=judge_model, lint=False))
        finally:
            if mutants:
                verifier.OBSERVERS.remove(recorder)
        final: dict[tuple[str, str, str], AttemptResult] = {}
        for r in outcome.results:
            key = (r.task_id, r.variant, r.agent)
            if key not in final or r.attempt > final[key].attempt:
                final[key] = r
        verdicts = []
        for task in suite.tasks:
            if tasks is not None and task.id not in tasks:
                continue
            for variant in task.spec.variant_ids():
                v = TaskVerdict(task.id, variant, final.get((task.id, variant, "oracle")),
                                final.get((task.id, variant, "nop")), trust=trust_levels(task))
                v.problems += _oracle_problems(v.oracle) if v.oracle else ["oracle produced no result"]
                v.problems += _nop_problems(v.nop) if v.nop else ["nop produced no result"]
                v.problems += judge_problems(task, outcome.manifest.judge)
                v.problems += [f"lint: {f.line()}" for f in lint_task(task) if f.error]
                if mutants and v.oracle is not None and v.oracle.end_state is EndState.passed:
                    v.mutants = _mutants(recorder, v.oracle, variant, outcome.manifest.sandbox.backend)
                    v.problems += [f"mutant survived: {m.mutant} (required predicates that all held: {m.held})"
                                   for m in v.survivors]
                verdicts.append(v)
    return ValidationReport(suite.spec.name, verdicts, keep)


def _mutants(recorder: Recorder, oracle: AttemptResult, variant: str, backend_name: str) -> list[MutantResult]:
    from assay.sandbox.registry import get_backend

    state = recorder.states.get(oracle.trial_id)
    if state is None:
        return [MutantResult(oracle.task_id, variant, "oracle end state", True,
                             error="the oracle's end state was not recorded: no mutant could be tried")]
    return asyncio.run(try_mutants(state, variant, get_backend(backend_name)))
