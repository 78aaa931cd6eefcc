"""``assay validate --controls``: derive each task's impossible-task controls and prove them
impossible mechanically where a run can: the oracle (the task's own reference solution, which
does what the instruction asks) must fail every control, and so must the do-nothing agent. A
control either passes is not impossible: the rule is wrong for that task, and it is named.
Tasks a rule could not be applied to are listed with the reason."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from assay.records.results import AttemptResult, EndState
from assay.run.runner import RunOptions, start_run
from assay.run.validate import simulator_model
from assay.spec.budget import NetworkProfile
from assay.spec.controls import Control, NotDerived, derive_controls
from assay.spec.load import load_suite

#: end states that prove nothing about a control (the harness failed, or no reference solution)
UNPROVEN = (EndState.infra_error, EndState.skipped)


@dataclass
class ControlVerdict:
    control_id: str
    of: str
    rule: str
    changed: str
    proof: str
    oracle: AttemptResult | None = None
    nop: AttemptResult | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


@dataclass
class ControlsReport:
    suite: str
    verdicts: list[ControlVerdict]
    not_derived: list[NotDerived]

    @property
    def ok(self) -> bool:
        """Every control proven impossible, and at least one derived (a check of nothing does not pass)."""
        return bool(self.verdicts) and all(v.ok for v in self.verdicts)


def _problems(who: str, r: AttemptResult | None) -> list[str]:
    if r is None:
        return [f"{who} produced no result: not proven"]
    if r.end_state is EndState.passed:
        return [f"{who} passes the control: it is not impossible (the rule does not fit this task)"]
    if r.end_state in UNPROVEN:
        return [f"{who} ended {r.end_state.value} ({r.reason}): not proven"]
    return []


def _verdict(c: Control, final: dict[tuple[str, str], AttemptResult]) -> ControlVerdict:
    v = ControlVerdict(c.task.id, c.of, c.rule, c.changed, c.proof, final.get((c.task.id, "oracle")),
                       final.get((c.task.id, "nop")))
    v.problems = _problems("oracle", v.oracle) + _problems("nop", v.nop)
    return v


def validate_controls(suite_path: Path, *, sandbox: str | None = None, keep: Path | None = None,
                      jobs: int = 1) -> ControlsReport:
    """Derive every control, run oracle and nop over the controls only, and judge each."""
    suite = load_suite(suite_path)
    with tempfile.TemporaryDirectory(prefix="assay-validate-controls-") as tmp:
        derived = derive_controls(suite, Path(tmp) / "controls")
        if not derived.controls:
            return ControlsReport(suite.spec.name, [], derived.not_derived)
        outcome = start_run(RunOptions(suite=suite_path, agents=["oracle", "nop"], out=keep or Path(tmp) / "run",
                                       sandbox=sandbox, network=NetworkProfile.harness, max_retries=0, jobs=jobs,
                                       model=simulator_model(suite), run_id=f"validate-controls-{suite.spec.name}",
                                       lint=False, controls=True, tasks=[c.task.id for c in derived.controls]))
        final: dict[tuple[str, str], AttemptResult] = {}
        for r in outcome.results:
            if (r.task_id, r.agent) not in final or r.attempt > final[(r.task_id, r.agent)].attempt:
                final[(r.task_id, r.agent)] = r
        return ControlsReport(suite.spec.name, [_verdict(c, final) for c in derived.controls], derived.not_derived)


__all__ = ["ControlVerdict", "ControlsReport", "validate_controls"]
