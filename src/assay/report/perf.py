"""The performance section of a report: its own tables and curves, beside capability, never mixed
into it. Every figure shows p50, p95, its bootstrap interval and the host it was taken on; a
figure taken under contention is marked; unsupported and failed figures say why (never a zero).
"""

from __future__ import annotations

from html import escape

from assay.records.perf import FigureStatus, PerfCurve, PerfDocument, PerfFigure
from assay.report import figures as F
from assay.report import plots

CONTENDED = "⚠ contended"
#: metric -> (axis label, formatter)
AXES = {"open_s": ("seconds to the first model request", "s"), "first_answer_s": ("seconds to the first answer", "s"),
        "turn_s": ("seconds per turn", "s"), "peak_bytes": ("memory peak", "bytes"),
        "store_bytes": ("bytes in the store", "bytes"), "tokens_sent": ("tokens sent", "tokens"),
        "inflation": ("open time / one session's", "ratio")}
#: scenario kind -> what its size counts
SIZE_OF = {"resume": "history turns", "compaction": "history turns", "store": "sessions in the store",
           "turns": "turn", "concurrency": "sessions at once"}


def value(v: float | None, unit: str) -> str:
    """A figure in its unit (bytes in MiB, seconds in ms below one)."""
    if v is None:
        return "n/a"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if abs(v) < 1 else f"{v:.2f} s"
    if unit == "bytes":
        return f"{v / 2**20:.1f} MiB" if abs(v) >= 2**20 else f"{v / 1024:.1f} KiB"
    if unit == "ratio":
        return f"{v:.2f}×"
    if unit == "bool":  # 1 yes, 0 no (a p50 between them: the repetitions disagreed)
        return "yes" if v == 1 else "no" if v == 0 else f"{v:.2f}"
    return f"{v:.0f}"


def host_note(f: PerfFigure) -> str:
    h = f.host
    parts = [f"load {h.load_per_cpu:.2f}/cpu" if h.load_per_cpu is not None else "",
             f"psi {100 * h.cpu_pressure:.0f}%" if h.cpu_pressure is not None else "",
             f"steal {100 * h.steal:.1f}%" if h.steal is not None else ""]
    return " ".join(p for p in parts if p) + (f" {CONTENDED}" if h.contended else "")


def figure_row(f: PerfFigure) -> list[str]:
    size = "" if f.size is None else str(f.size)
    if f.status != FigureStatus.measured:
        return [f.agent, f.scenario, f.metric, size, f.status.value.upper(), "", "", f.reason or ""]
    ci = "" if f.ci is None else f"[{value(f.ci[0], f.unit)}, {value(f.ci[1], f.unit)}]"
    return [f.agent, f.scenario, f.metric, size, value(f.p50, f.unit), value(f.p95, f.unit), ci,
            f"n={f.n} {host_note(f)}" + (f"; {f.reason}" if f.reason else "")]


HEAD = ["agent", "scenario", "figure", "size", "p50", "p95", "95 % interval (mean)", "n, host"]


def curve_note(c: PerfCurve) -> str:
    fit = "" if c.exponent is None else f"exponent {c.exponent:.2f} (R² {c.r2:.2f})"
    step = "" if c.slope is None else f"{value(c.slope, 'bytes' if c.unit == 'bytes' else '')}/step"
    return ", ".join(p for p in (fit, step) if p) + (f" {CONTENDED}" if c.contended else "")


def brief(doc: PerfDocument) -> list[PerfFigure]:
    """The figures a short table keeps: those without a size, each curve's largest size, and one
    unsupported or failed figure per scenario and reason (the curves carry the rest)."""
    out, seen = [], set()
    largest = {(c.agent, c.scenario, c.metric): max(c.sizes) for c in doc.curves}
    for f in doc.figures:
        if f.status != FigureStatus.measured:
            if (f.agent, f.scenario, f.reason) not in seen:
                seen.add((f.agent, f.scenario, f.reason))
                out.append(f)
        elif largest.get((f.agent, f.scenario, f.metric), f.size) == f.size:  # no curve: the one size
            out.append(f)
    return out


def render_markdown(doc: PerfDocument, *, full: bool = True) -> str:
    """The performance section as Markdown: the figures table (``full``: every one; else
    :func:`brief`), then each curve's fit."""
    lines = [f"## Performance ({doc.suite}, {doc.repeat} repetitions, scripted gateway: the model is out of "
             "the number)", "",
             "Agents: " + ", ".join(f"{a} {v or '?'}" for a, v in doc.agents.items()), "",
             "| " + " | ".join(HEAD) + " |", "|" + "---|" * len(HEAD)]
    shown = doc.figures if full else brief(doc)
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in figure_row(f)) + " |" for f in shown]
    if doc.curves:
        lines += ["", "### Growth", "", "| agent | scenario | figure | sizes | p50 | fit |", "|---|---|---|---|---|---|"]
        for c in doc.curves:
            lines.append(f"| {c.agent} | {c.scenario} | {c.metric} | {', '.join(map(str, c.sizes))} | "
                         f"{', '.join(value(v, c.unit) for v in c.p50)} | {curve_note(c)} |")
    if doc.metrics:
        lines += ["", "Figures: " + "; ".join(f"`{m}` {what}" for m, what in doc.metrics.items()) + "."]
    return "\n".join(lines) + "\n"


def curve_figure(doc: PerfDocument, scenario: str, metric: str) -> str:
    """One growth figure: every agent's curve of one scenario's metric."""
    curves = [c for c in doc.curves if c.scenario == scenario and c.metric == metric]
    label, unit = AXES.get(metric, (metric, ""))
    scale = 2**20 if unit == "bytes" else 1.0
    series = [F.Series(c.agent, [float(x) for x in c.sizes], [y / scale for y in c.p50], curve_note(c))
              for c in curves]
    kind = doc.kinds.get(scenario, scenario)
    return plots.growth_curve(f"perf-{scenario}-{metric}", f"{scenario}: {label}", series,
                              xlabel=SIZE_OF.get(kind, "size"), ylabel=label + (" (MiB)" if unit == "bytes" else ""))


def render_html(doc: PerfDocument) -> str:
    """The performance section as HTML: the curves as figures, then the figures table."""
    shown = sorted({(c.scenario, c.metric) for c in doc.curves})
    figs = "".join(curve_figure(doc, s, m) for s, m in shown)
    legend = ("<dl class='perf-metrics'>" + "".join(f"<dt>{escape(m)}</dt><dd>{escape(w)}</dd>"
                                                     for m, w in doc.metrics.items()) + "</dl>") if doc.metrics else ""
    rows = "".join("<tr" + (" class='contended'" if f.host.contended else "") + ">"
                   + "".join(f"<td>{escape(c)}</td>" for c in figure_row(f)) + "</tr>" for f in doc.figures)
    return (f"<section id='performance'><h2>Performance</h2><p>{escape(doc.suite)}: {doc.repeat} repetitions against "
            "the scripted gateway (the model is out of the number); beside capability, never part of it.</p>"
            + plots.note() + figs + "<table class='perf'><tr>" + "".join(f"<th>{escape(h)}</th>" for h in HEAD)
            + f"</tr>{rows}</table>" + legend + "</section>")


def html_page(doc: PerfDocument) -> str:
    """A self-contained page of one performance document."""
    return ("<!doctype html><html><head><meta charset='utf-8'><title>assay performance</title><style>"
            "body{font:14px system-ui,sans-serif;max-width:1400px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}tr.contended{background:#fff4e0}</style>"
            f"</head><body>{render_html(doc)}</body></html>")
