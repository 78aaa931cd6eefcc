"""The report's figures drawn by matplotlib: one function per kind of figure, each taking plain
figures data (never a run directory) and returning a matplotlib ``Figure``, so the HTML report and
any later viewer draw the same thing. :func:`to_svg` turns one into a self-contained inline SVG.

matplotlib (the ``plots`` extra) is imported inside the functions: without it, the report lays the
same data out as tables (:mod:`assay.report.plots`). Text is measured by matplotlib itself and
the canvas cut to it (``bbox_inches="tight"``), so no label runs off the edge.
"""

from __future__ import annotations

import io
import re
from html import escape
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from assay.report.fmt import num, pct

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = ["#3b6ea8", "#c2573a", "#5a9a4b", "#8a5aa8", "#c29a2a", "#3a9aa0", "#a83b6e", "#6b6b6b"]
#: figure width in inches: at 72 pt per inch and 4/3 px per pt, 1:1 in a 1344 px content column
WIDTH_IN = 14.0
EVENT_COLOURS = {"tool_call": "#3b6ea8", "tool_result": "#5a9a4b", "model_response": "#8a5aa8", "error": "#c2573a",
                 "incident": "#c2573a", "fault_injected": "#c29a2a", "predicate_result": "#3a9aa0"}
RC = {"svg.fonttype": "none", "svg.hashsalt": "assay-report", "font.size": 10.0, "axes.titlesize": 11.0,
      "axes.titleweight": "bold", "axes.spines.top": False, "axes.spines.right": False}

Formatter = Callable[[float | None], str]
#: hover texts of a figure's marks (artist gid -> text), written as SVG <title> by to_svg
#: and their kind as a CSS class ("bar", "cell", "pt"), for tests and style sheets to find them
TIPS: WeakKeyDictionary[Figure, dict[str, tuple[str, str]]] = WeakKeyDictionary()


def _tip(fig: Figure, artist: object, kind: str, text: str) -> None:
    tips = TIPS.setdefault(fig, {})
    gid = f"tip{len(tips)}"
    artist.set_gid(gid)  # type: ignore[attr-defined]
    tips[gid] = (kind, text)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    lo: float | None = None
    hi: float | None = None
    href: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    href: str | None = None


@dataclass(frozen=True)
class Event:
    """One mark of a trace timeline: seconds from the trial's start, its kind, a label, a link."""
    t: float
    kind: str
    label: str
    href: str | None = None


def rate(v: float | None) -> str:
    """A rate as the tables print it ('50.0 %')."""
    return pct(v, " ")


def number(v: float | None) -> str:
    return num(v, ".3g")


def frontier(points: list[Point]) -> list[Point]:
    """Points not dominated (another point at most as costly and at least as successful, one strictly)."""
    keep = [p for p in points if not any((q.x <= p.x and q.y >= p.y) and (q.x < p.x or q.y > p.y) for q in points)]
    return sorted(keep, key=lambda p: (p.x, p.y))


def _figure(height_in: float) -> Figure:
    from matplotlib.backends.backend_svg import FigureCanvasSVG
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend

    fig = Figure(figsize=(WIDTH_IN, height_in), layout="constrained")
    FigureCanvasSVG(fig)  # the SVG backend, named: whatever MPLBACKEND says
    return fig


def bar_chart(title: str, bars: list[Bar], *, vmax: float | None = None, fmt: Formatter = number) -> Figure:
    """Horizontal bars with optional interval whiskers, each labelled with its value (``fmt``) and
    note; a missing value is written 'n/a', never drawn as 0."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(0.9 + 0.42 * max(1, len(bars)))
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        ys = list(range(len(bars)))[::-1]
        top = max([b.hi if b.hi is not None else (b.value or 0.0) for b in bars] + [0.0])
        vmax = vmax if vmax is not None else (top or 1.0)
        for y, (i, b) in zip(ys, enumerate(bars)):
            text = f"n/a {b.note}".strip() if b.value is None else f"{fmt(b.value)} {b.note}".strip()
            if b.value is not None:
                rect = ax.barh(y, b.value, height=0.6, color=PALETTE[i % len(PALETTE)])[0]
                rect.set_url(b.href)
                _tip(fig, rect, "bar", f"{b.label}: {text}")
                if b.lo is not None and b.hi is not None:
                    ax.errorbar((b.lo + b.hi) / 2, y, xerr=[[(b.hi - b.lo) / 2]], fmt="none", ecolor="#222",
                                capsize=5)
            end = max(b.value or 0.0, b.hi or 0.0)
            ax.annotate(text, (end, y), xytext=(6, 0), textcoords="offset points", va="center",
                        color="#888" if b.value is None else "#222")
        ax.set_yticks(ys, [b.label for b in bars])
        ax.set_xlim(0, vmax)
        ax.set_ylim(-0.6, max(1, len(bars)) - 0.4)  # rows in place even when no bar is drawn
        ax.xaxis.set_major_formatter(lambda v, _: fmt(v))
    return fig


def heatmap(title: str, rows: list[str], cols: list[str], values: dict[tuple[str, str], float | None],
            hrefs: dict[tuple[str, str], str] | None = None, *, fmt: Formatter = rate) -> Figure:
    """Rows x columns of rates in [0, 1], red (0) to green (1), each cell written out; no data is grey."""
    import matplotlib
    from matplotlib.patches import Rectangle

    cmap = matplotlib.colormaps["RdYlGn"]
    with matplotlib.rc_context(RC):
        fig = _figure(1.0 + 0.45 * max(1, len(rows)))
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                v = values.get((r, c))
                cell = Rectangle((j, i), 0.97, 0.94, color="#dddddd" if v is None else cmap(0.15 + 0.7 * v))
                cell.set_url((hrefs or {}).get((r, c)))
                _tip(fig, cell, "cell", f"{r} / {c}: {fmt(v)}")
                ax.add_patch(cell)
                ax.text(j + 0.485, i + 0.47, fmt(v), ha="center", va="center")
        ax.set_xlim(0, max(1, len(cols)))
        ax.set_ylim(max(1, len(rows)), 0)
        ax.set_xticks([j + 0.485 for j in range(len(cols))], cols)
        ax.set_yticks([i + 0.47 for i in range(len(rows))], rows)
        ax.xaxis.tick_top()
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
    return fig


def _points(fig: Figure, ax: Axes, points: list[Point], *, size: float, labels: bool, tip: Formatter) -> None:
    for i, p in enumerate(points):
        dot = ax.scatter([p.x], [p.y], s=size, color=PALETTE[i % len(PALETTE)] if labels else PALETTE[0],
                         alpha=1.0 if labels else 0.6, zorder=3)
        dot.set_urls([p.href])
        _tip(fig, dot, "pt", f"{p.label}: {number(p.x)}, {tip(p.y)}")
        if labels:
            ax.annotate(p.label, (p.x, p.y), xytext=(7, 6), textcoords="offset points")


def _zero_axis(ax: Axes, xs: list[float], what: str) -> None:
    """A real x axis even when every x is 0 (a range around it, and a note saying so)."""
    if xs and max(xs) <= 0:
        ax.set_xlim(-0.05, 1.0)
        ax.text(0.99, 0.04, f"{what} is 0 for every point", transform=ax.transAxes,
                ha="right", color="#666")
    else:
        ax.set_xlim(0, (max(xs) if xs else 1.0) * 1.12)


def pareto(title: str, points: list[Point], *, xlabel: str, ylabel: str, yfmt: Formatter = rate) -> Figure:
    """Cost (x, lower is better) against success (y, higher is better), the Pareto frontier dashed
    through the points no other point beats on both."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(4.2)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        front = frontier(points)
        if len(front) > 1:
            ax.plot([p.x for p in front], [p.y for p in front], "--", color="#888", zorder=2)
        _points(fig, ax, points, size=60, labels=True, tip=yfmt)
        if not points:
            ax.text(0.5, 0.5, "no agent with a success and a cost", transform=ax.transAxes, ha="center", color="#888")
        _zero_axis(ax, [p.x for p in points], "cost")
        ax.set_ylim(-0.05, 1.1)
        ax.yaxis.set_major_formatter(lambda v, _: yfmt(v))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig


def scatter(title: str, points: list[Point], *, xlabel: str, ylabel: str) -> Figure:
    """Points with y in [0, 1] against x from 0 (no frontier: nothing here is a trade-off)."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(3.6)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        _points(fig, ax, points, size=24, labels=False, tip=number)
        if not points:
            ax.text(0.5, 0.5, "no judged answer", transform=ax.transAxes, ha="center", color="#888")
        _zero_axis(ax, [p.x for p in points], xlabel)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig


def timeline(events: list[Event]) -> Figure:
    """A trial's trace as ticks on a time axis, each linking to its row in the event table."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(0.9)
        ax = fig.add_subplot()
        tmax = max((e.t for e in events), default=0.0) or 1.0
        ticks = ax.vlines([e.t for e in events], 0, 1, colors=[EVENT_COLOURS.get(e.kind, "#6b6b6b") for e in events],
                          linewidth=3)
        ticks.set_urls([e.href for e in events])
        ax.set_xlim(-0.01 * tmax, tmax * 1.01)
        ax.set_ylim(0, 1)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.xaxis.set_major_formatter(lambda v, _: f"{v:.3g} s")
    return fig


def to_svg(fig: Figure, name: str, title: str, *, css_class: str = "fig") -> str:
    """The figure as an inline ``<svg class=fig data-figure=NAME>`` scaled to its container's width:
    no XML prolog, no metadata, no date, its ids prefixed by ``name`` so figures inlined together
    stay unique; the same figure gives the same bytes."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.08, metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    text = _compact(text)
    tips = TIPS.get(fig, {})
    used = set(re.findall(r'(?:url\(#|xlink:href="#)([^")]+)', text)) | set(tips)
    text = re.sub(r'<g id="([^"]+)"', lambda m: m.group(0) if m.group(1) in used else "<g", text)
    prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", name) + "-"
    defined = set(re.findall(r'\bid="([^"]+)"', text))
    text = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = re.sub(r'(url\(#|xlink:href="#)([^")]+)',
                  lambda m: m.group(1) + (prefix + m.group(2) if m.group(2) in defined else m.group(2)), text)
    for gid, (kind, tip) in tips.items():
        text = text.replace(f'id="{prefix}{gid}">', f'id="{prefix}{gid}" class="{kind}"><title>{escape(tip)}</title>', 1)
    head, rest = text.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    head += (f' class="{css_class}" data-figure="{escape(name)}" role="img" aria-label="{escape(title)}"'
             ' style="width:100%;height:auto"')
    return head + ">" + rest.strip()


def _compact(text: str) -> str:
    """matplotlib's SVG without what an inline figure does not need: links open in the same page
    (no target), the font named once by the report's CSS, coordinates to 0.01 px."""
    text = text.replace(' target="_blank"', "")
    text = re.sub(r"font-family: [^;\"]*;? ?", "", text)
    text = re.sub(r' transform="rotate\(-0 [^)]*\)"', "", text)
    text = re.sub(r'\b(?:x|y|d|viewBox|width|height|transform)="[^"]*"',  # geometry only, never a label or link
                  lambda m: re.sub(r"(\d+\.\d\d)\d+", r"\1", m.group(0)), text)
    return re.sub(r"\s*\n\s*", "\n", text)


@dataclass(frozen=True)
class Series:
    """One line of a growth curve: its label, sizes and values (p50), and the fitted exponent."""

    label: str
    xs: list[float]
    ys: list[float]
    note: str = ""


def growth_curve(title: str, series: list[Series], *, xlabel: str, ylabel: str, yfmt: Formatter = number) -> Figure:
    """Figures against a size on log-log axes, one line per agent, labelled with its fitted
    exponent, so O(n) growth reads as a slope of 1 at a glance."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = _figure(3.6)
        ax = fig.add_subplot()
        ax.set_title(title, loc="left")
        for i, s in enumerate(series):
            (line,) = ax.plot(s.xs, s.ys, marker="o", color=PALETTE[i % len(PALETTE)],
                              label=f"{s.label} {s.note}".strip())
            _tip(fig, line, "pt", f"{s.label}: " + ", ".join(f"{x:g} → {yfmt(y)}" for x, y in zip(s.xs, s.ys)))
        if not series:
            ax.text(0.5, 0.5, "no measured curve", transform=ax.transAxes, ha="center", color="#888")
        else:
            ax.set_xscale("log")
            if all(y > 0 for s in series for y in s.ys):
                ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):  # plain numbers, not 2×10⁰
                axis.set_major_formatter(lambda v, _: f"{v:g}")
                axis.set_minor_formatter(lambda v, _: f"{v:g}")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig
