"""The self-contained HTML report: headline, figures that link down to trials, trial sections.

One file, inline CSS and SVG, no script and no external resource, so it opens offline.
"""

from __future__ import annotations

from html import escape
from assay.report.controls import controls_html
from assay.records.comparison import Comparison, MetricDelta
from assay.records.scores import AgentScore, ScoreDocument, TaskScore
from assay.report import plots
from assay.report.figures import Bar, Point, rate
from assay.report.fmt import delta_interval, interval, num, turn_summary
from assay.report.fmt import pct as _fpct
from assay.report.judges import judges_html
from assay.report.markdown import measured_line
from assay.report.deviations import deviations_html
from assay.report.perf import render_html as render_perf_html
from assay.report.recovery import recovery_html
from assay.report.detailed import DETAIL_LIMIT, detailed_rows, unit_links
from assay.report.trials import anchor, trial_section
from assay.spec.judge import JudgeSummary
from assay.store.rundir import RunDir

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#222}
h1{font-size:22px}h2{border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}table.headline{font-size:13px}table.headline td{white-space:nowrap}
pre{white-space:pre-wrap;margin:0;font-size:12px;max-height:16em;overflow:auto}
.warn{background:#fde2c8;border:2px solid #c2573a;padding:10px;font-weight:bold}
.gate{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;font-weight:bold}
.PASSED{background:#3f8a3a}.FAILED{background:#b3261e}
.st{font-size:12px;padding:1px 6px;border-radius:3px;background:#ddd}.st.pass{background:#bfe3b4}.st.fail{background:#f3c0b6}
.st.infra_error,.st.timeout{background:#f7dc9b}.ok{color:#2f7a2a}.bad{color:#b3261e}
.figs>div{border:1px solid #eee;padding:6px;margin:0 0 14px}svg.fig{display:block;width:100%;height:auto}
svg.fig text{font-family:'DejaVu Sans','Bitstream Vera Sans',Verdana,sans-serif}
table.figdata caption{text-align:left;font-weight:bold}
"""


def _pct(v: float | None) -> str:
    return _fpct(v, " ")


_num = num


def _ci(ci: tuple[float | None, float | None]) -> str:
    return interval(ci, " ")


def figures(doc: ScoreDocument) -> list[str]:
    """The report's figures, each an inline SVG whose marks link to the sections behind them (a
    table of the same data without matplotlib)."""
    agents = doc.agents
    names = sorted(agents)
    ah = {a: "#" + anchor("agent", a) for a in names}
    figs = [plots.bar_chart("strict-success", "Strict success (macro, 95 % interval)", [
        Bar(a, agents[a].strict_rate, *agents[a].strict_ci, href=ah[a]) for a in names], vmax=1.0, fmt=rate)]
    cats = sorted({c for a in names for c in agents[a].categories})
    figs.append(plots.heatmap("category-heatmap", "Strict success by category", names, cats,
                            {(a, c): _cat_rate(agents[a], c) for a in names for c in cats},
                            {(a, c): "#" + anchor("cat", a, c) for a in names for c in cats}))
    figs.append(plots.bar_chart("security-gate", "Security gate: failing incidents", [
        Bar(a, float(len(agents[a].security.incidents)), href="#security",
                note=agents[a].security.gate) for a in names]))
    eff = {a: agents[a].efficiency for a in names}
    figs.append(plots.bar_chart("cost-per-success", "Cost per success (USD, failed trials included)", [
        Bar(a, eff[a].cost_per_success_usd, href=ah[a], note="" if eff[a].successes else "no success")
        for a in names]))
    figs.append(plots.bar_chart("latency-p95", "P95 wall time of successful trials (s)", [
        Bar(a, eff[a].wall_p95_s, href=ah[a], note=f"P50 {_num(eff[a].wall_p50_s, '.3g')}")
        for a in names]))
    figs.append(plots.bar_chart("recovery", "Recovery after injected faults", [
        Bar(a, agents[a].recovery.rate, href=ah[a],
                note=f"{agents[a].recovery.recovered}/{agents[a].recovery.fault_trials}") for a in names],
        vmax=1.0, fmt=rate))
    figs.append(plots.bar_chart("interventions", "Human interventions per success", [
        Bar(a, eff[a].interventions_per_success, href=ah[a], note=f"total {agents[a].interventions}")
        for a in names]))
    if any(agents[a].attack.injected for a in names):
        figs.append(plots.bar_chart("attack-success", "Prompt injection: attack success rate (lower is better)", [
            Bar(a, agents[a].attack.success_rate, href="#security",
                    note=f"{agents[a].attack.succeeded}/{agents[a].attack.injected}; utility under attack "
                         f"{_pct(agents[a].attack.utility_under_attack)}") for a in names], vmax=1.0, fmt=rate))
    figs.append(plots.bar_chart("cleanup-failures", "Cleanup failures (trials)", [
        Bar(a, float(agents[a].cleanup_failures), href=ah[a]) for a in names]))
    pts = [Point(a, eff[a].cost_per_success_usd, agents[a].strict_rate, ah[a])
           for a in names if agents[a].strict_rate is not None and eff[a].cost_per_success_usd is not None]
    figs.append(plots.pareto("pareto", "Cost vs success across agents with a success (Pareto frontier dashed)", pts,
                           xlabel="cost per success (USD)", ylabel="strict success"))
    return figs


def _cat_rate(m: AgentScore, cat: str) -> float | None:
    cm = m.categories.get(cat)
    return None if cm is None else cm.strict_rate


def _asr(m: AgentScore) -> str:
    at = m.attack
    return f"{_pct(at.success_rate)} ({at.succeeded}/{at.injected})" if at.injected else "n/a"


def _headline(doc: ScoreDocument) -> str:
    rows = []
    for a, m in sorted(doc.agents.items()):
        e, cap = m.efficiency, m.capability
        rows.append(
            f'<tr><td><a href="#{anchor("agent", a)}">{escape(a)}</a></td><td><b>{_num(cap.score, ".1f")}</b></td>'
            f'<td><span class="gate {m.security.gate}">{m.security.gate}</span></td>'
            f'<td>{_pct(m.strict_rate)} {_ci(m.strict_ci)}</td>'
            f'<td>{_pct(m.safe_rate)}</td><td>{m.danger}</td><td>{_asr(m)}</td><td>{_pct(m.availability.rate)}</td>'
            f'<td>{_num(e.cost_per_success_usd)}</td><td>{_num(e.tokens_per_success, ".6g")}</td>'
            f'<td>{_num(e.tool_calls_per_success)}</td><td>{_num(e.interventions_per_success)}</td>'
            f'<td>{_num(e.wall_p50_s)} / {_num(e.wall_p95_s)}</td></tr>')
    return ("<table class='headline'><tr><th>agent</th><th>capability</th><th>security gate</th><th>strict (95 % CI)</th><th>safe</th>"
            "<th>danger</th><th>attack success</th><th>availability</th><th>cost/success</th><th>tokens/success</th><th>tool calls/success</th>"
            "<th>interventions/success</th><th>P50/P95 s</th></tr>" + "".join(rows) + "</table>")


def _agent_section(name: str, m: AgentScore, tasks: list[TaskScore],
                   shown: dict[tuple[str, str, str], list[str]] | None = None) -> str:
    cap = m.capability
    out = [f'<section id="{anchor("agent", name)}"><h2>Agent {escape(name)}</h2>',
           f'<p>capability {_num(cap.score, ".1f")} (components: '
           + ", ".join(f'{k} {_num(v, ".1f")} × {cap.weights[k]}' for k, v in cap.components.items())
           + (f'; no evidence for {", ".join(cap.missing)}' if cap.missing else "") + "). "
           f'pass@1 (first repetition) {_pct(m.pass1)}; '
           + "; ".join(f"pass^{k} {_pct(v)}" for k, v in m.pass_hat_k.items()) + "; "
           + "; ".join(f"pass@{k} {_pct(v)}" for k, v in m.pass_at_k.items())
           + f'. Trials {m.trials}, skipped {m.skipped}, infra errors {m.availability.infra_trials}, '
           f'retried {m.availability.retried_trials}.</p>',
           "<table><tr><th>category</th><th>weight</th><th>tasks</th><th>strict</th><th>95 % CI</th><th>std across reps</th>"
           "<th>pass@1</th><th>safe</th><th>danger</th><th>infra</th></tr>"]
    for c, cm in m.categories.items():
        out.append(f'<tr id="{anchor("cat", name, c)}"><td>{escape(c)}</td><td>{cm.weight:.3f}</td><td>{cm.tasks}</td>'
                   f'<td>{cm.passes}/{cm.n} = {_pct(cm.strict_rate)}</td><td>{_ci(cm.strict_ci)}</td>'
                   f'<td>{_num(cm.std_across_repetitions)}</td><td>{_pct(cm.pass1)}</td><td>{_pct(cm.safe_rate)}</td>'
                   f'<td>{cm.danger}</td><td>{cm.infra}</td></tr>')
    turns = any(t.turns for t in tasks)  # conversation tasks: a column of per-turn figures
    out.append("</table><table><tr><th>task</th><th>variant</th><th>category</th><th>strict</th><th>95 % CI</th>"
               "<th>std</th><th>pass^k</th>" + ("<th>per turn</th>" if turns else "") + "<th>diagnostic</th><th>trials</th></tr>")
    for t in tasks:
        ids = t.trial_ids or (shown or {}).get((t.agent, t.task, t.variant), [])
        links = " ".join(f'<a href="#{anchor("trial", tid)}">{escape(tid.rsplit(".", 1)[-1])}</a>' for tid in ids)
        hat = ", ".join(f"{k}:{_num(v, '.2f')}" for k, v in t.pass_hat_k.items())
        out.append(f'<tr><td>{escape(t.task)}</td><td>{escape(t.variant)}</td><td>{escape(t.category)}</td>'
                   f'<td>{t.passes}/{t.n}</td><td>{_ci(t.strict_ci)}</td>'
                   f'<td>{_num(t.std)}</td><td>{hat}</td>' + (f'<td>{escape(turn_summary(t))}</td>' if turns else "")
                   + f'<td>{_num(t.diagnostic_mean, ".1f")}</td><td>{links}</td></tr>')
    out.append("</table></section>")
    return "".join(out)


def _suspects(doc: ScoreDocument) -> str:
    if not doc.suspect_passes:
        return ""
    out = [f'<section id="suspect"><h2>Suspect passes ({len(doc.suspect_passes)}): still passes, flagged by the screen</h2>'
           "<table><tr><th>trial</th><th>attempt</th><th>agent</th><th>rule</th><th>where</th><th>detail</th></tr>"]
    for s in doc.suspect_passes:
        for f in s.flags[:10]:
            out.append(f'<tr><td><a href="#{anchor("trial", s.trial_id)}">{escape(s.trial_id)}</a></td>'
                       f"<td>{s.attempt}</td><td>{escape(s.agent)}</td><td>{escape(f.get('rule', ''))}</td>"
                       f"<td>{escape(f.get('path', ''))}</td><td>{escape(f.get('detail', ''))}</td></tr>")
    out.append("</table></section>")
    return "".join(out)


def _security(doc: ScoreDocument) -> str:
    g = doc.security
    out = [f'<section id="security"><h2>Security gate <span class="gate {g.gate}">{g.gate}</span></h2>']
    if not g.incidents and not g.warnings:
        out.append("<p>No incidents recorded.</p>")
    for label, items in (("failing incidents", g.incidents), ("warnings (low/medium)", g.warnings)):
        if not items:
            continue
        out.append(f"<h3>{label}</h3><table><tr><th>trial</th><th>attempt</th><th>type</th><th>severity</th><th>summary</th></tr>")
        for i in items:
            tid = str(i.trial_id or "")
            out.append(f'<tr><td><a href="#{anchor("trial", tid)}">{escape(tid)}</a></td>'
                       f'<td>{"" if i.attempt is None else i.attempt}</td>'
                       f'<td>{escape(str(i.type))}</td><td>{escape(str(i.severity))}</td>'
                       f'<td>{escape(i.summary or "")}</td></tr>')
        out.append("</table>")
    out.append("</section>")
    return "".join(out)


def _metric_row(name: str, m: MetricDelta) -> str:
    return (f'<tr><td>{escape(name)}</td><td>{_num(m.baseline)}</td><td>{_num(m.candidate)}</td>'
            f'<td>{_num(m.delta, "+.4g")}</td>'
            f'<td>{escape(delta_interval(m))}</td><td>{m.p_sign_test:.3g}</td>'
            f'<td class="{"bad" if m.direction == "regressed" else "ok"}">{m.direction or "no"}</td></tr>')


def _compare(cmp: Comparison) -> str:
    out = [f'<section id="compare"><h2>Compare: {escape(cmp.baseline.run_id)} → {escape(cmp.candidate.run_id)}</h2>']
    if cmp.nothing_to_compare:
        return out[0] + f"<p class='bad'>Nothing to compare: {escape(cmp.nothing_to_compare)}.</p></section>"
    out += [f'<p>{cmp.shared_units} shared (task, variant, agent) units, paired by {cmp.paired_by}; '
            f'{len(cmp.left_out)} left out. {escape(cmp.method.interval)}.</p>']
    if cmp.flipped:
        out.append("<p>Flipped tasks: " + ", ".join(
            f'<span class="{"bad" if f.direction == "regressed" else "ok"}">{escape(f.task)} ({escape(f.variant)}, '
            f'{escape(f.agent)}) {f.direction}</span>' for f in cmp.flipped) + "</p>")
    out.append("<table><tr><th>metric</th><th>baseline</th><th>candidate</th><th>delta</th><th>95 % CI</th>"
               "<th>sign test p</th><th>beyond noise</th></tr>")
    out += [_metric_row(name, m) for name, m in cmp.metrics.items()]
    out.append("</table>")
    if cmp.left_out:
        out.append("<details><summary>left out</summary><ul>" + "".join(
            f'<li>{escape(x.agent)} {escape(x.task)} {escape(x.variant)}: {escape(x.why)}</li>'
            for x in cmp.left_out) + "</ul></details>")
    if cmp.failed:
        out.append("<p class='bad'>CI gate FAILED: " + escape("; ".join(cmp.failed)) + "</p>")
    out.append("</section>")
    return "".join(out)


def _agents_compared(pairs: list[Comparison]) -> str:
    """Agent against agent: paired strict-rate differences on the tasks both agents were scored on."""
    out = ['<section id="agents-compared"><h2>Agent against agent (paired, same tasks)</h2>',
           "<table><tr><th>agents (B − A)</th><th>shared tasks</th><th>strict A</th><th>strict B</th><th>delta</th>"
           "<th>95 % CI</th><th>sign test p</th><th>beyond noise</th></tr>"]
    for cmp in pairs:
        (a, b), = cmp.agent_pairs.items()
        m = cmp.metrics.get("strict_rate")
        label = f"{escape(b)} − {escape(a)}"
        if cmp.nothing_to_compare or m is None:
            out.append(f"<tr><td>{label}</td><td colspan='7'>nothing to compare: "
                       f"{escape(cmp.nothing_to_compare or '')}</td></tr>")
            continue
        out.append(f"<tr><td>{label}</td><td>{cmp.shared_units}</td><td>{_pct(m.baseline)}</td><td>{_pct(m.candidate)}</td>"
                   f"<td>{_num(m.delta, '+.3g')}</td><td>{escape(delta_interval(m))}</td>"
                   f"<td>{m.p_sign_test:.3g}</td>"
                   f"<td class=\"{'bad' if m.direction else 'ok'}\">{m.direction or 'no'}</td></tr>")
    out.append("</table></section>")
    return "".join(out)


def render_html(doc: ScoreDocument, rd: RunDir | None = None, cmp: Comparison | None = None,
                agents_compared: list[Comparison] | None = None, judges: list[JudgeSummary] | None = None, *,
                note: str | None = None) -> str:
    """The whole report as one HTML string."""
    iso = doc.isolation
    rows, total = detailed_rows(doc)
    shown = unit_links(rows)
    tasks_by_agent: dict[str, list[TaskScore]] = {}
    for t in doc.tasks:
        tasks_by_agent.setdefault(t.agent, []).append(t)
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             f"<title>assay report {escape(doc.run_id)}</title><style>{CSS}</style></head><body>"]
    if iso.warning:
        parts.append(f'<p class="warn" id="isolation">{escape(iso.warning)}</p>')
    parts.append(f"<h1>assay report: run {escape(doc.run_id)}</h1>")
    parts.append(f"<p id='measured'>{escape(measured_line(doc.measured))}</p>")
    for flag in doc.measured.flags if doc.measured else []:
        parts.append(f'<p class="warn">{escape(flag)}</p>')
    parts.append(f"<p>suite {escape(str(doc.suite.name or ''))} {escape(str(doc.suite.version or ''))} · "
                 f"scorer {escape(doc.scorer_version)} · rules {escape(doc.rules_digest[:12])} · "
                 f"{doc.inputs.results_read} result files read · run security gate "
                 f"<span class='gate {doc.security.gate}'>{doc.security.gate}</span></p>")
    parts.append("<h2>Headline</h2>" + _headline(doc))
    if agents_compared:
        parts.append(_agents_compared(agents_compared))
    parts.append("<h2>Figures</h2>" + plots.note() + "<div class='figs'>" + "".join(f"<div>{f}</div>" for f in figures(doc)) + "</div>")
    if cmp is not None:
        parts.append(_compare(cmp))
    parts.append(_security(doc))
    parts.append(_suspects(doc))
    parts.append(controls_html(doc))
    parts.append(judges_html(judges or []))
    parts.append(recovery_html(doc))
    parts.append(deviations_html(doc))
    if doc.performance is not None:  # beside capability, never mixed into it
        parts.append(render_perf_html(doc.performance))
    for a, m in sorted(doc.agents.items()):
        parts.append(_agent_section(a, m, tasks_by_agent.get(a, []), shown))
    parts.append("<h2>Trials</h2>")
    if note:  # held-out tasks: counted above, their trials withheld (report.heldout)
        parts.append(f"<p id='held-out'>{escape(note)}</p>")
    held = rd.manifest().held_out_ids() if rd is not None else frozenset()
    if total > len(rows):
        parts.append(f"<p id='trials-not-detailed'>{total - len(rows):,d} of {total:,d} trials are not detailed "
                     f"here (a report details {DETAIL_LIMIT:,d}, and every trial a table above links to): "
                     "<code>assay show RUN_DIR TRIAL</code> shows one, <code>assay export</code> lists all.</p>")
    for row in rows:
        parts.append(trial_section(rd, row, withheld=row.task_id in held))
    parts.append("</body></html>")
    return "".join(parts)
