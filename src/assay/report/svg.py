"""Inline SVG figures drawn in Python: no plotting library, no CDN, nothing to fetch to open them.

Every mark can carry a link (``href``) down to the section of the report that holds the trials
behind it. Each figure is an ``<svg class="fig" data-figure=NAME>`` so tests can find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

PALETTE = ["#3b6ea8", "#c2573a", "#5a9a4b", "#8a5aa8", "#c29a2a", "#3a9aa0", "#a83b6e", "#6b6b6b"]


@dataclass(frozen=True)
class Bar:
    label: str
    value: float | None
    lo: float | None = None
    hi: float | None = None
    href: str | None = None
    note: str = ""


def _a(href: str | None, inner: str) -> str:
    return f'<a href="{escape(href)}">{inner}</a>' if href else inner


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}g}"


def bar_chart(name: str, title: str, bars: list[Bar], *, vmax: float | None = None, unit: str = "",
              width: int = 560) -> str:
    """Horizontal bars with optional interval whiskers; missing values are drawn as 'n/a'."""
    row_h, left, right, top = 26, 150, 70, 28
    height = top + row_h * max(1, len(bars)) + 24
    values = [b.hi if b.hi is not None else b.value for b in bars if b.value is not None]
    vmax = vmax if vmax is not None else (max(values) if values and max(values) > 0 else 1.0)
    scale = (width - left - right) / vmax
    out = [f'<svg class="fig" data-figure="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="4" y="16" class="ttl">{escape(title)}</text>',
           f'<path class="axis" d="M{left},{top}V{height - 20}" stroke="#444"/>']
    for i, b in enumerate(bars):
        y = top + i * row_h
        label = f'<text x="{left - 6}" y="{y + 16}" text-anchor="end">{escape(b.label[:22])}</text>'
        out.append(_a(b.href, label))
        if b.value is None:
            out.append(f'<text x="{left + 4}" y="{y + 16}" class="na">n/a {escape(b.note)}</text>')
            continue
        w = max(1.0, b.value * scale)
        colour = PALETTE[i % len(PALETTE)]
        bar = (f'<rect class="bar" x="{left}" y="{y + 4}" width="{w:.1f}" height="{row_h - 8}" fill="{colour}">'
               f'<title>{escape(b.label)}: {_fmt(b.value)}{unit}</title></rect>')
        out.append(_a(b.href, bar))
        if b.lo is not None and b.hi is not None:
            x1, x2, yc = left + b.lo * scale, left + b.hi * scale, y + row_h / 2
            out.append(f'<path class="ci" d="M{x1:.1f},{yc - 6}v12M{x1:.1f},{yc}H{x2:.1f}M{x2:.1f},{yc - 6}v12" '
                       f'stroke="#222" fill="none"/>')
        out.append(f'<text x="{left + max(w, (b.hi or 0) * scale) + 6:.1f}" y="{y + 16}">{_fmt(b.value)}{unit}'
                   f'{(" " + escape(b.note)) if b.note else ""}</text>')
    out.append("</svg>")
    return "".join(out)


def heatmap(name: str, title: str, rows: list[str], cols: list[str], values: dict[tuple[str, str], float | None],
            hrefs: dict[tuple[str, str], str] | None = None) -> str:
    """Rows x columns of rates in [0, 1]; colour from red (0) to green (1); empty cells are grey."""
    cw, rh, left, top = 90, 28, 150, 46
    width = left + cw * max(1, len(cols)) + 10
    height = top + rh * max(1, len(rows)) + 10
    out = [f'<svg class="fig" data-figure="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="4" y="16" class="ttl">{escape(title)}</text>']
    for j, c in enumerate(cols):
        out.append(f'<text x="{left + j * cw + cw / 2}" y="{top - 8}" text-anchor="middle">{escape(c[:12])}</text>')
    for i, r in enumerate(rows):
        y = top + i * rh
        out.append(f'<text x="{left - 6}" y="{y + 18}" text-anchor="end">{escape(r[:22])}</text>')
        for j, c in enumerate(cols):
            v = values.get((r, c))
            fill = "#dddddd" if v is None else _ramp(v)
            cell = (f'<rect class="cell" x="{left + j * cw}" y="{y}" width="{cw - 2}" height="{rh - 2}" fill="{fill}">'
                    f'<title>{escape(r)} / {escape(c)}: {_fmt(v)}</title></rect>'
                    f'<text x="{left + j * cw + cw / 2}" y="{y + 18}" text-anchor="middle">{_fmt(v, 2)}</text>')
            out.append(_a((hrefs or {}).get((r, c)), cell))
    out.append("</svg>")
    return "".join(out)


def _ramp(v: float) -> str:
    v = min(1.0, max(0.0, v))
    r = int(215 - 130 * v)
    g = int(90 + 100 * v)
    b = int(80 + 10 * v)
    return f"#{r:02x}{g:02x}{b:02x}"


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    href: str | None = None


def pareto(name: str, title: str, points: list[Point], *, xlabel: str, ylabel: str, width: int = 560,
           height: int = 320) -> str:
    """Scatter of cost (x, lower is better) against success (y, higher is better) with the Pareto
    frontier drawn through the points no other point beats on both."""
    left, bottom, top, right = 60, 40, 44, 20
    xs = [p.x for p in points] or [1.0]
    xmax = max(xs) * 1.1 or 1.0
    sx = (width - left - right) / xmax
    sy = (height - top - bottom) / 1.0

    def px(p: Point) -> tuple[float, float]:
        return left + p.x * sx, height - bottom - p.y * sy

    out = [f'<svg class="fig" data-figure="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="4" y="16" class="ttl">{escape(title)}</text>',
           f'<path d="M{left},{top}V{height - bottom}H{width - right}" stroke="#444" fill="none"/>',
           f'<text x="{(width + left) / 2}" y="{height - 8}" text-anchor="middle">{escape(xlabel)}</text>',
           f'<text x="14" y="{(height) / 2}" transform="rotate(-90 14 {height / 2})" text-anchor="middle">'
           f'{escape(ylabel)}</text>',
           f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">1</text>',
           f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
           f'<text x="{width - right}" y="{height - bottom + 14}" text-anchor="end">{_fmt(xmax)}</text>']
    front = frontier(points)
    if len(front) > 1:
        d = "M" + "L".join(f"{px(p)[0]:.1f},{px(p)[1]:.1f}" for p in front)
        out.append(f'<path class="frontier" d="{d}" stroke="#888" stroke-dasharray="4 3" fill="none"/>')
    for i, p in enumerate(points):
        x, y = px(p)
        dot = (f'<circle class="pt" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{PALETTE[i % len(PALETTE)]}">'
               f'<title>{escape(p.label)}: cost {_fmt(p.x)}, success {_fmt(p.y)}</title></circle>'
               f'<text x="{x + 8:.1f}" y="{y - 8:.1f}">{escape(p.label[:20])}</text>')
        out.append(_a(p.href, dot))
    out.append("</svg>")
    return "".join(out)


def scatter(name: str, title: str, points: list[Point], *, xlabel: str, ylabel: str, width: int = 560,
            height: int = 280) -> str:
    """Points with y in [0, 1] against x from 0 (no frontier: nothing here is a trade-off)."""
    left, bottom, top, right = 60, 40, 30, 20
    xmax = max([p.x for p in points] or [1.0]) * 1.05 or 1.0
    sx, sy = (width - left - right) / xmax, float(height - top - bottom)
    out = [f'<svg class="fig" data-figure="{escape(name)}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="4" y="16" class="ttl">{escape(title)}</text>',
           f'<path d="M{left},{top}V{height - bottom}H{width - right}" stroke="#444" fill="none"/>',
           f'<text x="{(width + left) / 2}" y="{height - 8}" text-anchor="middle">{escape(xlabel)}</text>',
           f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" text-anchor="middle">'
           f'{escape(ylabel)}</text>',
           f'<text x="{left - 4}" y="{top + 4}" text-anchor="end">1</text>',
           f'<text x="{left - 4}" y="{height - bottom}" text-anchor="end">0</text>',
           f'<text x="{width - right}" y="{height - bottom + 14}" text-anchor="end">{_fmt(xmax)}</text>']
    if not points:
        out.append(f'<text class="na" x="{left + 10}" y="{top + 20}">no judged answer</text>')
    for p in points:
        x, y = left + p.x * sx, height - bottom - p.y * sy
        dot = (f'<circle class="pt" cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{PALETTE[0]}" fill-opacity="0.6">'
               f'<title>{escape(p.label)}: {_fmt(p.x)} chars, {_fmt(p.y)}</title></circle>')
        out.append(_a(p.href, dot))
    out.append("</svg>")
    return "".join(out)


def frontier(points: list[Point]) -> list[Point]:
    """Points not dominated (another point at most as costly and at least as successful, one strictly)."""
    keep = [p for p in points if not any((q.x <= p.x and q.y >= p.y) and (q.x < p.x or q.y > p.y) for q in points)]
    return sorted(keep, key=lambda p: (p.x, p.y))


def timeline(name: str, events: list[tuple[float, str, str, str | None]], *, width: int = 720) -> str:
    """A trial's trace as ticks on a time axis: (seconds from start, kind, label, href)."""
    height, left, right = 54, 10, 10
    tmax = max((e[0] for e in events), default=0.0) or 1.0
    scale = (width - left - right) / tmax
    colours = {"tool_call": "#3b6ea8", "tool_result": "#5a9a4b", "model_response": "#8a5aa8", "error": "#c2573a",
               "incident": "#c2573a", "fault_injected": "#c29a2a", "predicate_result": "#3a9aa0"}
    out = [f'<svg class="fig timeline" data-figure="{escape(name)}" xmlns="http://www.w3.org/2000/svg" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
           f'<path d="M{left},30H{width - right}" stroke="#999"/>']
    for t, kind, label, href in events:
        x = left + t * scale
        mark = (f'<rect class="ev" x="{x - 2:.1f}" y="18" width="4" height="24" fill="{colours.get(kind, "#6b6b6b")}">'
                f'<title>{t:.2f}s {escape(kind)} {escape(label)}</title></rect>')
        out.append(_a(href, mark))
    out.append(f'<text x="{left}" y="12">0 s</text><text x="{width - right}" y="12" text-anchor="end">{tmax:.2f} s</text>')
    out.append("</svg>")
    return "".join(out)
