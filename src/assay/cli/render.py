"""Terminal rendering of run summaries and one trial's evidence (read-only views)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime, timezone
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from assay.cli.sanitize import neutralise, safe
from assay.report.fmt import interval, pct
from assay.score.engine import score_run
from assay.spec.results import AttemptResult, EndState
from assay.spec.scores import ScoreDocument
from assay.store.rundir import RunDir
from assay.trace.writer import read_events

#: console width off a terminal: wide enough that no table cell is cut
UNBOUNDED_WIDTH = 4096
RULE_WIDTH = 100
STATE_STYLE = {"pass": "green", "fail": "red", "timeout": "yellow", "infra_error": "magenta", "skipped": "dim"}


def final_results(results: list[AttemptResult]) -> dict[str, AttemptResult]:
    """The last attempt of every trial."""
    out: dict[str, AttemptResult] = {}
    for r in results:
        if r.trial_id not in out or r.attempt > out[r.trial_id].attempt:
            out[r.trial_id] = r
    return out


class _LogConsole(Console):
    """Off a terminal: nothing wrapped or cut, and rules keep a readable width."""

    def rule(self, title: Any = "", *, characters: str = "─", style: Any = "rule.line",
             align: Literal["left", "center", "right"] = "center") -> None:
        self.print(Rule(title, characters=characters, style=style, align=align), width=RULE_WIDTH)


def make_console(*, stderr: bool = False) -> Console:
    """A console for tables and messages. Off a terminal (a pipe, a CI log) nothing is wrapped or
    cut: one line per message, full trial ids and column names, so logs can be searched."""
    probe = Console(stderr=stderr)
    if probe.is_terminal:
        return probe
    return _LogConsole(stderr=stderr, width=UNBOUNDED_WIDTH, soft_wrap=True)


def summary_table(doc: ScoreDocument, *, title: str = "results") -> Table:
    """Per agent, by the scorer's denominator rules (one truth with ``assay score``): skipped trials
    are out of the denominator, planned trials without a result and infra errors are in; zero
    scored trials show no rate. Rates are rounded here, for display only."""
    states: dict[str, Counter[str]] = defaultdict(Counter)
    for t in doc.trials:
        states[t.agent]["missing" if t.attempts == 0 and t.reason in ("missing", "run_budget") else t.end_state] += 1
    flags = doc.measured.flags if doc.measured else []
    t = Table(title=title, caption="\n".join(f"WARNING {f}" for f in flags) or None, caption_justify="left")
    for col in ("agent", "trials", "pass", "fail", "timeout", "infra_error", "no result", "skipped", "strict (scored)",
                "macro (95% CI)", "attempts"):
        t.add_column(col, justify="right" if col != "agent" else "left", no_wrap=True)
    for agent, m in sorted(doc.agents.items()):
        c = states[agent]
        micro = "n/a" if not m.scored else f"{m.passes / m.scored:.0%}"
        t.add_row(agent, str(m.trials), str(c["pass"]), str(c["fail"]), str(c["timeout"]), str(c["infra_error"]),
                  str(c["missing"]), str(c["skipped"]), f"{micro} ({m.passes}/{m.scored})",
                  f"{pct(m.strict_rate)} {interval(m.strict_ci)}", str(m.availability.attempts))
    return t


def trials_table(results: list[AttemptResult], held: frozenset[str] = frozenset()) -> Table:
    """One row per trial; a held-out task's trials are counted in the caption, never listed."""
    t = Table(title="trials")
    for col in ("trial", "end state", "reason", "diagnostic", "attempts", "wall s", "tokens", "incidents"):
        t.add_column(col)
    count = Counter(r.trial_id for r in results)
    finals = final_results(results)
    withheld = sum(1 for r in finals.values() if r.task_id in held)
    if withheld:
        t.caption = f"{withheld} trial(s) of held-out tasks not listed (counted in the summary)"
    for tid, r in sorted(finals.items()):
        if r.task_id in held:
            continue
        st = r.end_state.value
        t.add_row(safe(tid), f"[{STATE_STYLE[st]}]{st}[/]", safe(r.reason or ""), f"{r.diagnostic_score:.0f}", str(count[tid]),
                  f"{r.timings.wall_s:.1f}", str(r.usage.tokens), str(len(r.incidents)))
    return t


def show_run(console: Console, rd: RunDir) -> None:
    m = rd.manifest()
    results = rd.results()
    if not m.sandbox.isolated:
        console.print("[bold red]UNSANDBOXED:[/] this run used the host backend; results are not isolated")
    agents = ", ".join(f"{a.name} {a.version or ''}".strip() for a in m.agents)
    console.print(f"run [bold]{m.run_id}[/] suite {m.suite['name']} v{m.suite['version']}  agents "
                  f"{agents}  sandbox {m.sandbox.backend}"
                  f" ({m.sandbox.network.value})  planned {len(m.plan.trials)} trials")
    console.print(trials_table(results, m.held_out_ids()))
    console.print(summary_table(score_run(rd.path, verify=False)))
    missing = set(m.plan.trials) - {r.trial_id for r in results}
    if missing:
        console.print(f"[yellow]{len(missing)} planned trial(s) have no result yet; `assay run --resume {rd.path}`[/]")


def _ts(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


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
        pt = Table(title="predicates")
        for col in ("id", "kind", "required", "weight", "passed", "evidence"):
            pt.add_column(col)
        for p in r.predicates:
            ev = json.dumps(p.evidence, ensure_ascii=False)
            pt.add_row(safe(p.id), safe(p.kind), "yes" if p.required else "no", f"{p.weight:g}",
                       "[green]yes[/]" if p.passed else "[red]no[/]", safe(ev[:400]))
        console.print(pt)
        for inc in r.incidents:
            console.print(Text("incident ", style="bold red") + safe(f"{inc.type} ({inc.severity}): {inc.summary}"))
        for e in r.errors:
            console.print(Text("error ", style="magenta") + safe(e))
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
        et.add_column(col)
    for e in events[:events_limit]:
        et.add_row(str(e.seq), _ts(e.ts), str(e.attempt), e.source.value, e.kind.value,
                   safe(json.dumps(e.data, ensure_ascii=False)[:300]))
    console.print(et)
    return True


def state_of(results: list[AttemptResult]) -> Counter[str]:
    return Counter(r.end_state.value for r in final_results(results).values())


__all__ = ["show_run", "show_trial", "summary_table", "final_results", "EndState", "state_of", "make_console"]
