"""Terminal rendering of run summaries and one trial's evidence (read-only views)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

from rich import box
from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from assay.cli.browser_view import browser_view
from assay.cli.console import make_console
from assay.cli.sanitize import neutralise, safe
from assay.errors import IntegrityError
from assay.records.results import AttemptResult, EndState
from assay.records.scores import ScoreDocument
from assay.records.trial_file import iter_trials
from assay.report.fmt import interval, pct
from assay.score.engine import score_figures
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from assay.trace.writer import read_events
from assay.untrusted.shown import one_line

#: below this width a one-trial view lists predicate evidence under its table, not in a column
EVIDENCE_COLUMN_MIN = 120
#: what the trials table's other columns take; an id longer than width minus this is elided
TRIAL_COLUMNS_WIDTH = 50
STATE_STYLE = {"pass": "green", "fail": "red", "timeout": "yellow", "infra_error": "magenta", "skipped": "dim"}


def final_results(results: list[AttemptResult]) -> dict[str, AttemptResult]:
    """The last attempt of every trial."""
    out: dict[str, AttemptResult] = {}
    for r in results:
        if r.trial_id not in out or r.attempt > out[r.trial_id].attempt:
            out[r.trial_id] = r
    return out


def summary_table(doc: ScoreDocument, *, title: str = "results", width: int | None = None) -> Table:
    """Per agent, by the scorer's denominator rules (one truth with ``assay score``): skipped trials
    are out of the denominator, planned trials without a result and infra errors are in; zero
    scored trials show no rate. Rates are rounded here, for display only."""
    states: dict[str, Counter[str]] = defaultdict(Counter)
    for t in iter_trials(doc):
        states[t.agent]["missing" if t.attempts == 0 and t.reason in ("missing", "run_budget") else t.end_state] += 1
    flags = doc.measured.flags if doc.measured else []
    narrow = width is not None and width < EVIDENCE_COLUMN_MIN
    t = Table(title=title, caption="\n".join(f"WARNING {f}" for f in flags) or None, caption_justify="left",
              box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD)
    cols = (("agent", "agent"), ("trials", "n"), ("pass", "pass"), ("fail", "fail"), ("timeout", "t/o"),
            ("infra_error", "infra"), ("no result", "none"), ("skipped", "skip"), ("strict (scored)", "strict"),
            ("macro (95% CI)", "macro (95% CI)"), ("attempts", "att"))
    for wide, short in cols:
        # narrow terminals get short headers and fold a cell rather than cutting it to "…"
        t.add_column(short if narrow else wide, justify="right" if wide != "agent" else "left", overflow="fold")
    for agent, m in sorted(doc.agents.items()):
        c = states[agent]
        micro = "n/a" if not m.scored else f"{m.passes / m.scored:.0%}"
        t.add_row(agent, str(m.trials), str(c["pass"]), str(c["fail"]), str(c["timeout"]), str(c["infra_error"]),
                  str(c["missing"]), str(c["skipped"]), f"{micro} ({m.passes}/{m.scored})",
                  f"{pct(m.strict_rate)} {interval(m.strict_ci)}", str(m.availability.attempts))
    return t


def shared_prefix(ids: list[str]) -> str:
    """The prefix every id shares, cut back to its last separator (``-``, ``.``, ``_``) so what
    remains of each id starts at a word; "" for fewer than two ids."""
    if len(ids) < 2:
        return ""
    import os.path

    common = os.path.commonprefix(ids)
    cut = max(common.rfind(c) for c in "-._")
    return common[:cut + 1] if cut > 0 else ""


def trials_table(results: list[AttemptResult], held: frozenset[str] = frozenset(), *,
                 width: int | None = None) -> Table:
    """One row per trial; a held-out task's trials are counted in the caption, never listed.
    In a terminal of ``width`` columns too narrow for the ids, the prefix all ids share is said
    once in the title and elided from the rows, and what is left folds, never cut: every row
    stays distinguishable."""
    finals = final_results(results)
    shown = sorted(tid for tid, r in finals.items() if r.task_id not in held)
    prefix = ""
    if width is not None and max((len(i) for i in shown), default=0) > width - TRIAL_COLUMNS_WIDTH:
        prefix = shared_prefix(shown)
    narrow = width is not None and width < EVIDENCE_COLUMN_MIN
    t = Table(title="trials" + (f" (ids: {safe(prefix)}…)" if prefix else ""), box=box.SIMPLE_HEAD if narrow else box.HEAVY_HEAD)
    t.add_column("trial", overflow="fold", ratio=1, min_width=12)
    cols = (("end state", "state"), ("reason", "reason"), ("diagnostic", "diag"), ("attempts", "att"),
            ("wall s", "wall s"), ("tokens", "tok"), ("incidents", "inc"))
    for wide, short in cols:
        t.add_column(short if narrow else wide, overflow="fold")
    count = Counter(r.trial_id for r in results)
    withheld = sum(1 for r in finals.values() if r.task_id in held)
    if withheld:
        t.caption = f"{withheld} trial(s) of held-out tasks not listed (counted in the summary)"
    for tid in shown:
        r = finals[tid]
        st = r.end_state.value
        why = (r.reason or "") + (" host_contended" if r.host_contended else "")
        t.add_row(safe(("…" + tid[len(prefix):]) if prefix else tid), f"[{STATE_STYLE[st]}]{st}[/]", safe(why.strip()), f"{r.diagnostic_score:.0f}", str(count[tid]),
                  f"{r.timings.wall_s:.1f}", str(r.usage.tokens), str(len(r.incidents)))
    return t


def integrity_warning(console: Console, run: Path, problems: list[str], *, shown: int = 20) -> None:
    """Said before anything of a run whose evidence changed after sealing: what follows is what is on
    disk now, not what was recorded (each problem one inert line: a tamperer names the files)."""
    console.print(Text(f"INTEGRITY CHECK FAILED: {len(problems)} problem(s); the evidence below is what is on disk "
                       "now, not what the run recorded, and no figure is computed from it "
                       f"(`assay verify {run}` lists every problem)", style="bold red"))
    for problem in problems[:shown]:
        console.print(Text("  - ") + Text(one_line(problem)))
    if len(problems) > shown:
        console.print(f"  ... and {len(problems) - shown} more")


def checked_summary(rd: RunDir) -> tuple[ScoreDocument | None, list[str]]:
    """The run's score, checked in the pass that reads it, and no problem; or, when it fails its
    integrity check, no score and the problems as `assay verify` lists them."""
    try:
        return score_figures(rd.path), []  # the summary's figures: no row is shown
    except IntegrityError:
        return None, verify_run(rd.path).problems


def show_run(console: Console, rd: RunDir, *, intact: bool = True, summary: ScoreDocument | None = None) -> None:
    """The run's trials and, for a run that passes its integrity check, its summary figures
    (``summary``: that score, when the caller has it)."""
    m = rd.manifest()
    results = rd.results()
    if not m.sandbox.isolated:
        console.print("[bold red]UNSANDBOXED:[/] this run used the host backend; results are not isolated")
    agents = ", ".join(f"{a.name} {a.version or ''}".strip() for a in m.agents)
    console.print(f"run [bold]{m.run_id}[/] suite {m.suite['name']} v{m.suite['version']}  agents "
                  f"{agents}  sandbox {m.sandbox.backend}"
                  f" ({m.sandbox.network.value})  planned {len(m.plan.trials)} trials")
    console.print(trials_table(results, m.held_out_ids(), width=console.width))
    if intact:
        console.print(summary_table(summary or score_figures(rd.path, verify=False), width=console.width))
    else:
        console.print("[red]no summary: the run fails its integrity check[/]")
    missing = set(m.plan.trials) - {r.trial_id for r in results}
    if missing:
        console.print(f"[yellow]{len(missing)} planned trial(s) have no result yet; `assay run --resume {rd.path}`[/]")


def _ts(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def predicates_view(r: AttemptResult, width: int) -> Group:
    """The predicates table; narrower than :data:`EVIDENCE_COLUMN_MIN`, each predicate's evidence
    follows the table on lines of its own (folded, never a 16-character column)."""
    inline = width >= EVIDENCE_COLUMN_MIN
    pt = Table(title="predicates")
    for col in ("id", "kind", "required", "weight", "passed", *(["evidence"] if inline else [])):
        pt.add_column(col, overflow="fold", ratio=1 if col == "evidence" else None)
    below: list[Text] = []
    for p in r.predicates:
        ev = safe(json.dumps(p.evidence, ensure_ascii=False)[:400])
        pt.add_row(safe(p.id), safe(p.kind), "yes" if p.required else "no", f"{p.weight:g}",
                   "[green]yes[/]" if p.passed else "[red]no[/]", *([ev] if inline else []))
        if not inline:
            line = Text("evidence ", style="dim") + safe(p.id) + Text(": ") + ev
            line.overflow = "fold"
            below.append(line)
    return Group(pt, *below)


def show_trial(console: Console, rd: RunDir, trial_id: str, *, events_limit: int = 200) -> bool:
    attempts = [r for r in (rd.result(trial_id, n) for n in rd.attempts_of(trial_id)) if r is not None]
    if not attempts and not rd.trace_path(trial_id).exists():
        return False
    held = rd.manifest().held_out_ids()
    if any(r.task_id in held for r in attempts) or (not attempts and trial_id.split(".", 1)[0] in held):
        st = max(attempts, key=lambda r: r.attempt).end_state.value if attempts else "no result"
        console.print(f"{neutralise(trial_id)}: {st}; held-out task: its evidence, outputs and trace are not shown")
        return True
    for r in attempts:
        st = r.end_state.value
        console.rule(f"{neutralise(trial_id)}  attempt {r.attempt}  [{STATE_STYLE[st]}]{st}[/]  {escape(neutralise(r.reason or ''))}"
                     + ("  (partial)" if r.partial else ""))
        tm = r.timings
        console.print(f"wall {tm.wall_s:.2f}s  setup {tm.setup_s:.2f}s  agent {tm.agent_s:.2f}s  verify {tm.verify_s:.2f}s  "
                      f"exit {r.agent_exit_code}  diagnostic {r.diagnostic_score:.1f}  retry_reason {r.retry_reason}")
        u = r.usage
        console.print(f"model calls {u.model_calls}  tokens in/out {u.input_tokens}/{u.output_tokens}  cost ${u.cost_usd:.4f}  "
                      f"tool calls {u.tool_calls}")
        console.print(predicates_view(r, console.width))
        if (view := browser_view(r)) is not None:
            console.print(view)
        for inc in r.incidents:  # one line each: a summary quotes the agent's choices, a newline made a fake line
            console.print(Text("incident ", style="bold red") + Text(one_line(f"{inc.type} ({inc.severity}): "
                                                                              f"{inc.summary}")))
        for e in r.errors:
            console.print(Text("error ", style="magenta") + Text(one_line(e)))
        for name, digest in sorted(r.artifacts.items()):
            if name in ("agent.stdout", "agent.stderr", "agent.final_answer"):
                text = rd.read_artifact(digest).decode(errors="replace")
                console.rule(name, style="dim")
                console.print(safe(text[-3000:]), highlight=False)
            else:
                console.print(f"artifact {name}: {rd.artifact_path(digest).relative_to(rd.path)}")
    events = read_events(rd.trace_path(trial_id))
    et = Table(title=f"trace ({len(events)} events)")
    for col in ("seq", "time", "att", "source", "kind", "data"):
        et.add_column(col, overflow="fold", ratio=1 if col == "data" else None)
    for e in events[:events_limit]:
        et.add_row(str(e.seq), _ts(e.ts), str(e.attempt), e.source.value, e.kind.value,
                   safe(json.dumps(e.data, ensure_ascii=False)[:300]))
    console.print(et)
    return True


def state_of(results: list[AttemptResult]) -> Counter[str]:
    return Counter(r.end_state.value for r in final_results(results).values())


__all__ = ["checked_summary", "integrity_warning", "show_run", "show_trial", "summary_table", "final_results", "EndState", "state_of", "make_console"]
