"""``assay validate --controls`` on the terminal: each impossible-task control with the rule that
made it, what changed, and the oracle's and nop's verdicts; the tasks no rule fitted, with why."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table

from assay.cli.console import make_console

if TYPE_CHECKING:
    from assay.records.scores import ScoreDocument
    from assay.run.validate_controls import ControlsReport

out = make_console()


def controls_json(rep: ControlsReport) -> dict[str, Any]:
    return {"ok": rep.ok, "controls": [
        {"control": v.control_id, "of": v.of, "rule": v.rule, "changed": v.changed, "proof": v.proof, "ok": v.ok,
         "oracle": v.oracle.end_state.value if v.oracle else None, "nop": v.nop.end_state.value if v.nop else None,
         "problems": list(v.problems)} for v in rep.verdicts],
        "not_derived": [{"task": n.task_id, "rule": n.rule, "reason": n.reason} for n in rep.not_derived]}


def controls_line(doc: ScoreDocument) -> str | None:
    """The terminal's line under the summary table: each agent's control pass rate, the passes named."""
    c = doc.controls
    if c is None:
        return None
    rates = "; ".join(f"{a} {m.passes}/{m.scored}" for a, m in c.agents.items())
    named = (" [red]passed: " + ", ".join(p.trial_id for p in c.passes[:10]) + "[/]") if c.passes else ""
    return f"impossible-task controls passed (0 is the goal; not in capability): {rates}{named}"


def show_controls(suite: Path, *, sandbox: str | None, jobs: int, keep: Path | None = None,
                  quiet: bool = False) -> ControlsReport:
    """Derive and prove the suite's controls; print them unless ``quiet``."""
    from assay.run.validate_controls import validate_controls

    rep = validate_controls(suite, sandbox=sandbox, jobs=jobs, keep=keep)
    if quiet:
        return rep
    t = Table(title=f"impossible-task controls of {rep.suite}")
    for col in ("control", "rule", "changed", "oracle", "nop", "verdict"):
        t.add_column(col)
    for v in rep.verdicts:
        t.add_row(v.control_id, v.rule, v.changed, v.oracle.end_state.value if v.oracle else "-",
                  v.nop.end_state.value if v.nop else "-", "[green]impossible[/]" if v.ok else "[red]NOT PROVEN[/]")
    out.print(t)
    for v in rep.verdicts:
        for p in v.problems:
            out.print(f"[red]control {v.control_id}[/]: {p}", highlight=False)
    for n in rep.not_derived:
        out.print(f"not derived: {n.task_id} ({n.rule}): {n.reason}", highlight=False)
    proven = sum(v.ok for v in rep.verdicts)
    out.print(f"{proven} of {len(rep.verdicts)} control(s) proven impossible; {len(rep.not_derived)} not derived"
              + ("" if rep.verdicts else " (no control could be derived: nothing was checked)"))
    return rep
