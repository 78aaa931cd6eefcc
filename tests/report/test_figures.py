"""The HTML report's figures: rates as percentages like the tables, a zero-cost scatter drawn on a
real axis, deterministic self-contained SVG, and a table (never a crash) without matplotlib."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from assay.report import build_report
from tests.score.synth import attempt, write_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rs = [attempt("a", "code", "good", 1, "pass"), attempt("b", "code", "good", 1, "pass"),
          attempt("a", "code", "half", 1, "pass"), attempt("b", "code", "half", 1, "fail")]
    return write_run(tmp_path_factory.mktemp("fig") / "run", {"code": 1}, rs).path


def _figure(html: str, name: str) -> str:
    start = html.index(f'data-figure="{name}"')
    return html[start:html.index("</svg>", start)]


def _texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def test_rates_in_figures_are_percentages_as_in_tables(run: Path) -> None:
    html = build_report(run, "html")
    assert "<td>50.0 % [" in html  # the headline table's formatter
    strict = _texts(_figure(html, "strict-success"))
    assert "50.0 %" in strict and "100.0 %" in strict, strict
    cells = _texts(_figure(html, "category-heatmap"))
    assert "50.0 %" in cells and "100.0 %" in cells, cells
    assert "0.5" not in strict and "1" not in strict


def test_a_scatter_whose_costs_are_all_zero_is_a_real_axis_that_says_so(run: Path) -> None:
    pareto = _figure(build_report(run, "html"), "pareto")
    texts = " ".join(_texts(pareto))
    assert "cost is 0" in texts
    xticks = {t for t in _texts(pareto) if re.fullmatch(r"-?\d+(\.\d+)?", t)}  # the y ticks are percentages
    assert len(xticks) >= 3, f"an axis, not a lone tick: {xticks}"
    assert "good" in texts and "half" in texts  # both points are drawn and named


def test_figures_are_deterministic_and_self_contained(run: Path) -> None:
    a, b = build_report(run, "html"), build_report(run, "html")
    assert a == b
    figs = re.findall(r"<svg.*?</svg>", a, re.S)
    assert len(figs) >= 9
    for svg in figs:
        assert "<script" not in svg and "@font-face" not in svg and "<image" not in svg
        assert not re.search(r'(src|href)="(https?:)?//', svg)
        assert 'style="width:100%' in svg.split(">", 1)[0] or "viewBox" in svg.split(">", 1)[0]
    ids = re.findall(r'\bid="([^"]+)"', a)
    assert len(ids) == len(set(ids)), "every id in the page is unique (figures are inlined together)"


def test_without_matplotlib_the_report_shows_tables_and_says_why(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for mod in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    html = build_report(run, "html")
    assert "matplotlib" in html and "pip install" in html  # the note names the package and the fix
    assert "<svg" not in html
    table = html[html.index('data-figure="strict-success"'):]
    table = table[:table.index("</table>")]
    assert "half" in table and "50.0 %" in table


def test_small_values_keep_their_digits_in_labels(tmp_path: Path) -> None:
    rs = [attempt("a", "code", "cheap", 1, "pass", cost=0.002632)]
    html = build_report(write_run(tmp_path / "run", {"code": 1}, rs).path, "html")
    assert "0.00263" in _texts(_figure(html, "cost-per-success"))


def test_each_figure_function_takes_plain_data_and_gives_a_figure_a_viewer_can_draw() -> None:
    from matplotlib.figure import Figure

    from assay.report import figures as F

    long = "a-rather-long-agent-name-that-used-to-be-cut"
    figs = [F.bar_chart("t", [F.Bar(long, 1.0, note="with a long note that runs past the bar's end")], vmax=1.0),
            F.heatmap("t", ["a"], ["c"], {("a", "c"): None}),
            F.pareto("t", [F.Point("a", 0.0, 1.0)], xlabel="x", ylabel="y"),
            F.scatter("t", [], xlabel="x", ylabel="y"),
            F.timeline([F.Event(0.0, "tool_call", "ls"), F.Event(1.5, "error", "boom", "#ev-1")])]
    assert all(isinstance(f, Figure) for f in figs)
    svg = F.to_svg(figs[0], "long", "t")
    assert svg == F.to_svg(figs[0], "long", "t")  # same bytes every time (no date, fixed hash salt)
    assert long in svg and "with a long note" in svg  # whole labels, never cut to a fixed count of characters
    assert "n/a" in F.to_svg(figs[1], "h", "t") and "no judged answer" in F.to_svg(figs[3], "s", "t")
    tl = F.to_svg(figs[4], "tl", "t")
    assert 'xlink:href="#ev-1"' in tl and "target=" not in tl  # in-page links stay in the page
