"""The per-trial part of the HTML report: attempts, verifier evidence and the trace timeline."""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from assay.records.results import AttemptResult
from assay.records.scores import TrialScore
from assay.report.browser import browser_html
from assay.report.figures import Event
from assay.report.heldout import WITHHELD
from assay.report.plots import timeline
from assay.store.rundir import RunDir
from assay.trace.writer import iter_events

#: longest piece of evidence or event data shown inline
CLIP = 1500



def _host_line(res: AttemptResult) -> str:
    """CPU time the agent got and how busy the host was, where they were measured."""
    t = res.timings
    parts = [f"agent CPU {t.agent_cpu_s:.1f}s of {t.agent_s:.1f}s" if t.agent_cpu_s is not None else "",
             f"load/CPU {t.host_load_per_cpu:.2f}" if t.host_load_per_cpu is not None else "",
             f"CPU pressure {t.host_cpu_pressure:.0%}" if t.host_cpu_pressure is not None else ""]
    shown = [x for x in parts if x]
    return (" · " + escape(", ".join(shown))) if shown else ""

def anchor(kind: str, *parts: str) -> str:
    """A stable, HTML-safe id for a section of the report."""
    return kind + "-" + "-".join(re.sub(r"[^A-Za-z0-9_.]", "_", p) for p in parts)


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= CLIP else text[:CLIP] + f"… ({len(text) - CLIP} more chars)"


def _summary(kind: str, data: dict[str, Any]) -> str:
    if kind == "tool_call":
        return f"{data.get('name', '')} {_clip(data.get('arguments', ''))[:160]}"
    if kind == "tool_result":
        return f"{data.get('name', '')} ok={data.get('ok')} exit={data.get('exit_code')}"
    if kind == "model_response":
        u = data.get("usage") or {}
        return f"{data.get('model', '')} in={u.get('input_tokens', 0)} out={u.get('output_tokens', 0)}"
    if kind == "predicate_result":
        return f"{data.get('id')} ({data.get('kind')}) {'held' if data.get('passed') else 'FAILED'}"
    if kind in ("attempt_ended", "attempt_started"):
        return " ".join(f"{k}={data[k]}" for k in ("end_state", "reason", "agent", "repetition") if data.get(k) is not None)
    if kind in ("incident", "error", "fault_injected"):
        return _clip({k: v for k, v in data.items() if k != "evidence"})[:200]
    return _clip(data)[:160]


def trial_section(rd: RunDir | None, row: TrialScore, *, withheld: bool = False) -> str:
    """One trial: its result line, every attempt's verifier evidence, and its trace timeline; a
    held-out task's trial (``withheld``) shows nothing but that it is withheld."""
    tid = row.trial_id
    if withheld:
        return f'<section class="trial" id="{anchor("trial", tid)}"><p>{escape(WITHHELD)}</p></section>'
    state = row.end_state
    out = [f'<section class="trial" id="{anchor("trial", tid)}"><h3>{escape(tid)} '
           f'<span class="st {escape(state)}">{escape(state)}</span></h3>',
           f'<p>task {escape(row.task_id)} · variant {escape(row.variant)} · agent {escape(row.agent)} · '
           f'repetition {row.repetition} · attempts {row.attempts} (retries {row.retries}) · '
           f'strict {"yes" if row.strict_pass else "no"} · safe {"yes" if row.safe_pass else "no"} · '
           f'danger {row.danger} · diagnostic {row.diagnostic:.1f} · wall {row.wall_s:.2f}s · '
           f'cost ${row.cost_usd:.4f}{" · reason " + escape(str(row.reason)) if row.reason else ""}'
           f'{" · <b>host contended</b> (the host was overloaded when it timed out)" if row.host_contended else ""}</p>']
    if rd is None:
        out.append("</section>")
        return "".join(out)
    for n in rd.attempts_of(tid):
        res = rd.result(tid, n)
        if res is None:
            out.append(f"<p>attempt {n}: started, no result</p>")
            continue
        out.append(f'<details{" open" if n == row.attempts else ""}><summary>attempt {n}: '
                   f'{escape(res.end_state.value)}{" (" + escape(res.reason) + ")" if res.reason else ""}'
                   f'{" partial" if res.partial else ""}{" host contended" if res.host_contended else ""}'
                   f'{_host_line(res)}</summary>')
        if res.predicates:
            out.append("<table><tr><th>predicate</th><th>kind</th><th>trust</th><th>required</th><th>held</th>"
                       "<th>evidence</th></tr>")
            for p in res.predicates:
                ev = _clip(p.evidence) + (f" error: {p.error}" if p.error else "")
                trust = p.trust.value if p.trust is not None else "unknown"  # results older than trust levels
                out.append(f'<tr><td>{escape(p.id)}</td><td>{escape(p.kind)}</td><td>{escape(trust)}</td><td>{p.required}</td>'
                           f'<td class="{"ok" if p.passed else "bad"}">{p.passed}</td><td><pre>{escape(ev)}</pre></td></tr>')
            out.append("</table>")
        for inc in res.incidents:
            out.append(f'<p class="bad">incident {escape(inc.type)} ({escape(inc.severity)}): '
                       f'{escape(inc.summary)}</p>')
        if res.errors:
            out.append(f"<pre>{escape(_clip(res.errors))}</pre>")
        out.append(browser_html(rd, res))
        out.append("</details>")
    out.append(_timeline(rd, tid))
    out.append("</section>")
    return "".join(out)


def _timeline(rd: RunDir, tid: str) -> str:
    path = rd.trace_path(tid)
    events = list(iter_events(path))
    if not events:
        return "<p>no trace recorded</p>"
    t0 = events[0].ts
    marks = [Event(max(0.0, e.ts - t0), e.kind.value, _summary(e.kind.value, e.data),
                   f"#{anchor('ev', tid, str(e.seq))}") for e in events]
    rows = "".join(
        f'<tr id="{anchor("ev", tid, str(e.seq))}"><td>{e.seq}</td><td>{e.attempt}</td><td>{e.ts - t0:.3f}</td>'
        f'<td>{escape(e.source.value)}</td><td>{escape(e.kind.value)}</td><td>{escape(_summary(e.kind.value, e.data))}</td></tr>'
        for e in events)
    return (f"<h4>trace timeline</h4>{timeline(anchor('timeline', tid), marks)}"
            f"<details><summary>{len(events)} events</summary><table><tr><th>seq</th><th>attempt</th><th>t (s)</th>"
            f"<th>source</th><th>kind</th><th>summary</th></tr>{rows}</table></details>")
