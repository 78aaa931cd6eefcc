"""The performance section of the reports: beside capability in the score document, Markdown and
HTML of a real run directory; curves drawn as figures; unsupported and contended said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.report.perf import html_page, render_markdown
from tests.perf.docs import document


def test_markdown_names_unsupported_with_its_reason_and_marks_contention() -> None:
    md = render_markdown(document({"dsh": {"contended": True}}))
    assert "UNSUPPORTED" in md and "cannot take a planted history" in md
    assert "⚠ contended" in md
    assert "exponent 1.00" in md  # the resume curve's fit


def test_the_document_and_reports_say_which_first_token_figure_is_which() -> None:
    from assay.records.perf import PerfSample
    from assay.score.perf import score_samples

    got = [PerfSample(agent="pi", scenario="resume", metric=m, unit="s", size=10, value=v)
           for m, v in (("first_answer_s", 1.0), ("first_token_s", 1.2), ("open_s", 0.9))]
    doc = score_samples(got, suite="s", repeat=1, agents={"pi": "1"})
    assert set(doc.metrics) == {"first_answer_s", "first_token_s", "open_s"}  # only the figures it holds
    assert "gateway" in doc.metrics["first_answer_s"] and "stdout" in doc.metrics["first_token_s"]
    from html import unescape

    for text in (render_markdown(doc), unescape(html_page(doc))):
        assert "first_token_s" in text and "as printed" in text and "not the product's output" in text


def test_input_during_compaction_is_a_yes_or_no_with_its_evidence_and_no_curve() -> None:
    from html import unescape

    from assay.records.perf import FigureStatus, PerfSample
    from assay.score.perf import score_samples

    said = "written 0.001 s after the summary request (call 1) reached the gateway, which held its answer"
    got = [PerfSample(agent="pi", scenario="compaction", metric="accepts_input_during_compaction", unit="bool",
                      size=n, value=1.0, reason=said) for n in (100, 400)]
    got += [PerfSample(agent="pi", scenario="compaction", metric="input_ack_during_compaction_s", unit="s", size=400,
                       value=0.004),
            PerfSample(agent="hermes", scenario="compaction", metric="accepts_input_during_compaction", unit="bool",
                       size=400, status=FigureStatus.unsupported, reason="Hermes runs here as `hermes chat --query`")]
    doc = score_samples(got, suite="s", repeat=1, agents={"pi": "1", "hermes": "1"})
    assert not doc.curves  # a yes/no at two sizes is not a growth curve
    accepts = next(f for f in doc.figures if f.agent == "pi" and f.size == 400 and f.unit == "bool")
    assert accepts.reason == said  # a measured figure keeps its evidence
    for text in (render_markdown(doc), render_markdown(doc, full=False), unescape(html_page(doc))):
        assert "| pi | compaction | accepts_input_during_compaction | 400 | yes |" in text.replace(
            "<tr><td>", "| ").replace("</td><td>", " | ").replace("</td></tr>", " |")
        assert said in text and "4 ms" in text and "hermes chat --query" in text
        assert "accepts_input_during_compaction" in text and "held the answer to its summary request" in text


def test_html_draws_each_curve_as_a_figure() -> None:
    from assay.report import plots

    page = html_page(document({"pi": {"leak": 2e6}, "hermes": {"open_per_turn": 0.004}}))
    for name in ("perf-resume-open_s", "perf-turns-peak_bytes", "perf-concurrency-inflation"):
        assert f'data-figure="{name}"' in page, name  # a figure, or its table without matplotlib
    assert "exponent" in page
    if plots.available():
        assert page.count("<svg") >= 3
    else:
        assert "figures-as-tables" in page


@pytest.fixture(scope="module")
def run_with_perf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from assay.run import RunOptions, start_run
    from tests.conftest import write_suite, write_task

    root = tmp_path_factory.mktemp("perfreport")
    s = write_suite(root / "suite", categories=[{"id": "ops", "weight": 1}])
    write_task(s, "touch", task={"category": "ops", "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "done", "kind": "file_exists", "path": "done.txt"}]}, solution="echo ok > done.txt\n")
    out = root / "run"
    start_run(RunOptions(suite=s, agents=["oracle"], out=out, sandbox="host"))
    (out / "performance").mkdir()
    (out / "performance" / "performance.json").write_text(document({"oracle": {}}).model_dump_json())
    return out


def test_the_score_document_and_reports_carry_performance_beside_capability(run_with_perf: Path) -> None:
    from assay.report.build import build_report
    from assay.score import score_run

    doc = score_run(run_with_perf)
    assert doc.performance is not None and doc.performance.figures
    assert doc.agents["oracle"].strict_rate == 1.0  # capability unchanged by the performance section
    data = json.loads(build_report(run_with_perf, "json"))
    assert "performance" in json.dumps(data) and "resume" in json.dumps(data)
    md = build_report(run_with_perf, "md")
    assert "## Performance" in md
    html = build_report(run_with_perf, "html")
    assert "id='performance'" in html


def test_the_short_table_keeps_each_curve_s_largest_size_and_one_line_per_reason() -> None:
    doc = document({"dsh": {}})
    short = render_markdown(doc, full=False)
    assert "| resume | open_s | 1000 |" in short and "| resume | open_s | 10 |" not in short
    assert short.count("UNSUPPORTED") == 1 and "cannot take a planted history" in short
    assert len(short) < len(render_markdown(doc))


def test_the_short_table_keeps_a_figure_of_one_size_that_has_no_curve() -> None:
    from assay.records.perf import PerfSample
    from assay.score.perf import score_samples

    doc = score_samples([PerfSample(agent="oc", scenario="store", metric="open_s", unit="s", size=10000, value=34.0)],
                        suite="t", repeat=1, agents={"oc": "1"})
    assert "| store | open_s | 10000 | 34.00 s |" in render_markdown(doc, full=False)
