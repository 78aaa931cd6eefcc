"""A trial's trace timeline as a small inline SVG written directly: one tick per event, coloured
by its kind, each a link to its row in the event table with its summary as the hover text.

The matplotlib figure of the same data (:func:`assay.report.figures.timeline`) took about 32 ms a
trial, half a minute for a report of 1,000 trials; this takes a fraction of a millisecond and
needs no plotting library, so every report has its timelines (``bench/timeline.py``)."""

from __future__ import annotations

from html import escape

from assay.report.figures import EVENT_COLOURS, Event

#: the drawing's own units: the SVG scales to its container's width
WIDTH, HEIGHT, AXIS = 1000.0, 34.0, 14.0
OTHER = "#6b6b6b"
#: a label character's width in em, taken wide (digits are about 0.55 em in the default sans-serif)
LABEL_EM = 0.62


def _nice_step(span: float) -> float:
    """A tick spacing of 1, 2 or 5 times a power of ten giving at most 8 ticks over ``span``."""
    step = 10.0 ** int(f"{span / 8:e}".split("e")[1])
    for m in (1.0, 2.0, 5.0, 10.0):
        if span / (step * m) <= 8:
            return step * m
    return step * 10


def timeline_svg(name: str, events: list[Event]) -> str:
    """The timeline of ``events`` (seconds from the trial's start) as ``<svg data-figure=NAME>``."""
    tmax = max((e.t for e in events), default=0.0) or 1.0
    scale = (WIDTH - 20.0) / tmax
    marks = []
    for e in events:
        x = 10.0 + max(0.0, e.t) * scale
        tick = (f'<line x1="{x:.1f}" y1="2" x2="{x:.1f}" y2="{HEIGHT - AXIS:.0f}" stroke="'
                f'{EVENT_COLOURS.get(e.kind, OTHER)}" stroke-width="3"><title>{escape(f"{e.t:.3f} s {e.kind}: {e.label}")}'
                "</title></line>")
        marks.append(f'<a href="{escape(e.href)}">{tick}</a>' if e.href else tick)
    step = _nice_step(tmax)
    ticks = []
    n = 0
    while n * step <= tmax * 1.0001 and n < 20:
        x = 10.0 + n * step * scale
        label = f"{n * step:.3g} s"
        half = len(label) * LABEL_EM * 10 / 2  # a generous width: a label never leaves the drawing
        anchor = "start" if x - half < 0 else "end" if x + half > WIDTH else "middle"
        ticks.append(f'<text x="{x:.1f}" y="{HEIGHT - 2:.0f}" font-size="10" text-anchor="{anchor}">{label}</text>')
        n += 1
    axis = f'<line x1="10" y1="{HEIGHT - AXIS:.0f}" x2="{WIDTH - 10:.0f}" y2="{HEIGHT - AXIS:.0f}" stroke="#999"/>'
    return (f'<svg class="fig timeline" data-figure="{escape(name)}" role="img" aria-label="trace timeline" '
            f'viewBox="0 0 {WIDTH:.0f} {HEIGHT:.0f}" style="width:100%;height:auto">{axis}{"".join(marks)}'
            f'{"".join(ticks)}</svg>')
