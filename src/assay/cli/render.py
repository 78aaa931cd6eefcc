"""Terminal rendering of run summaries and one trial's evidence (read-only views)."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from datetime import datetime, timezone

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from assay.cli.sanitize import neutralise, safe
from assay.spec.results import AttemptResult, EndState
from assay.store.rundir import RunDir
from assay.trace.writer import read_events

STATE_STYLE = {"pass": "green", "fail": "red", "timeout": "yellow", "infra_error": "magenta", "skipped": "dim"}


def final_results(results: list[AttemptResult]) -> dict[str, AttemptResult]:
    """The last attempt of every trial."""
    out: dict[str, AttemptResult] = {}
    for r in results:
        if r.trial_id not in out or r.attempt > out[r.trial_id].attempt:
            out[r.trial_id] = r
    return out


def summary_table(results: list[AttemptResult], *, title: str = "results") -> Table:
    by_agent: dict[str, Counter[str]] = defaultdict(Counter)
    attempts: Counter[str] = Counter()
    for r in results:
        attempts[r.agent] += 1
    for r in final_results(results).values():
        by_agent[r.agent][r.end_state.value] += 1
    t = Table(title=title)
    for col in ("agent", "trials", "pass", "fail", "timeout", "infra_error", "skipped", "strict rate", "attempts"):
        t.add_column(col, justify="right" if col != "agent" else "left")
    for agent, c in sorted(by_agent.items()):
        n = sum(c.values())
        rate = c["pass"] / n if n else 0.0
        t.add_row(agent, str(n), str(c["pass"]), str(c["fail"]), str(c["timeout"]), str(c["infra_error"]),
                  str(c["skipped"]), f"{rate:.0%} ({c['pass']}/{n})", str(attempts[agent]))
    return t


def trials_table(results: list[AttemptResult]) -> Table:
    t = Table(title="trials")
    for col in ("trial", "end state", "reason", "diagnostic", "attempts", "wall s", "tokens", "incidents"):
        t.add_column(col)
    count = Counter(r.trial_id for r in results)
    for tid, r in sorted(final_results(results).items()):
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
    console.print(trials_table(results))
    console.print(summary_table(results))
    missing = set(m.plan.trials) - {r.trial_id for r in results}
    if missing:
        console.print(f"[yellow]{len(missing)} planned trial(s) have no result yet; `assay run --resume {rd.path}`[/]")


def _ts(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def show_trial(console: Console, rd: RunDir, trial_id: str, *, events_limit: int = 200) -> bool:
    attempts = [r for r in (rd.result(trial_id, n) for n in rd.attempts_of(trial_id)) if r is not None]
    if not attempts and not rd.trace_path(trial_id).exists():
        return False
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


__all__ = ["show_run", "show_trial", "summary_table", "final_results", "EndState", "state_of"]
