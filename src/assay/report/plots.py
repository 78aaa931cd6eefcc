"""Figures into the HTML report: matplotlib's SVG when the ``plots`` extra is installed, else the
same figures data as a plain table, with one note saying what to install. Never a crash for want
of a plotting library: the numbers are all there either way."""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from assay._optional import install_hint
from assay.report import figures as F

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NOTE = ("Figures are shown as tables: they are drawn with matplotlib, which is not installed "
        f"(fix: {install_hint('plots')}).")


def available() -> bool:
    """Whether matplotlib imports (a blocked or missing import both mean no)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def embed(name: str, title: str, draw: Callable[[], Figure], rows: list[list[str]], *, css_class: str = "fig") -> str:
    """One figure: ``draw()`` as inline SVG, or ``rows`` (the first one the header) as a table."""
    if available():
        fig = draw()
        return F.to_svg(fig, name, title, css_class=css_class)
    head, *body = rows or [[]]
    return (f'<table class="figdata" data-figure="{escape(name)}"><caption>{escape(title)}</caption><tr>'
            + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in body) + "</table>")


def note() -> str:
    """The one line the figures section carries when it falls back to tables ('' otherwise)."""
    return "" if available() else f"<p class='warn' id='figures-as-tables'>{escape(NOTE)}</p>"


def bar_chart(name: str, title: str, bars: list[F.Bar], *, vmax: float | None = None,
              fmt: F.Formatter = F.number) -> str:
    rows = [["", "value", "95 % interval", "note"]] + [
        [b.label, "n/a" if b.value is None else fmt(b.value),
         "" if b.lo is None or b.hi is None else f"[{fmt(b.lo)}, {fmt(b.hi)}]", b.note] for b in bars]
    return embed(name, title, lambda: F.bar_chart(title, bars, vmax=vmax, fmt=fmt), rows)


def heatmap(name: str, title: str, rows: list[str], cols: list[str], values: dict[tuple[str, str], float | None],
            hrefs: dict[tuple[str, str], str] | None = None) -> str:
    table = [[""] + cols] + [[r] + [F.rate(values.get((r, c))) for c in cols] for r in rows]
    return embed(name, title, lambda: F.heatmap(title, rows, cols, values, hrefs), table)


def pareto(name: str, title: str, points: list[F.Point], *, xlabel: str, ylabel: str) -> str:
    rows = [["", xlabel, ylabel]] + [[p.label, F.number(p.x), F.rate(p.y)] for p in points]
    return embed(name, title, lambda: F.pareto(title, points, xlabel=xlabel, ylabel=ylabel), rows)


def scatter(name: str, title: str, points: list[F.Point], *, xlabel: str, ylabel: str) -> str:
    rows = [["", xlabel, ylabel]] + [[p.label, F.number(p.x), F.number(p.y)] for p in points]
    return embed(name, title, lambda: F.scatter(title, points, xlabel=xlabel, ylabel=ylabel), rows)


def timeline(name: str, events: list[F.Event]) -> str:
    """A trace timeline, drawn directly as SVG (cheap enough for every trial, matplotlib or not;
    :func:`assay.report.figures.timeline` is the same figure for a viewer that draws with matplotlib)."""
    from assay.report.timeline_svg import timeline_svg

    return timeline_svg(name, events)


def growth_curve(name: str, title: str, series: list[F.Series], *, xlabel: str, ylabel: str,
                 yfmt: F.Formatter = F.number) -> str:
    rows = [["agent", xlabel, ylabel, "fit"]] + [[s.label, f"{x:g}", yfmt(y), s.note] for s in series
                                                  for x, y in zip(s.xs, s.ys)]
    return embed(name, title, lambda: F.growth_curve(title, series, xlabel=xlabel, ylabel=ylabel, yfmt=yfmt), rows)
