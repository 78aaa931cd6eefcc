"""Scoring performance samples: percentiles, the project's bootstrap, the log-log exponent and
per-step slope, inflation, and figures that are unsupported or failed (never a zero)."""

from __future__ import annotations

import math

import pytest

from assay.records.perf import FigureStatus, PerfSample
from assay.score.perf import figure, linear_slope, loglog_fit
from tests.perf.docs import document


def test_a_linear_curve_has_exponent_one_and_a_quadratic_two() -> None:
    sizes = [10, 100, 1000]
    exp, r2 = loglog_fit(sizes, [0.002 * n for n in sizes])
    assert exp == pytest.approx(1.0) and r2 == pytest.approx(1.0)
    exp2, _ = loglog_fit(sizes, [1e-6 * n * n for n in sizes])
    assert exp2 == pytest.approx(2.0)
    flat, _ = loglog_fit(sizes, [0.3, 0.3, 0.3])
    assert flat == pytest.approx(0.0)
    assert loglog_fit([10], [1.0]) is None  # one size: no fit, not a slope of 0
    assert linear_slope([1, 2, 3, 4], [5.0, 7.0, 9.0, 11.0]) == pytest.approx(2.0)


def test_the_document_reports_growth_and_leak_from_known_samples() -> None:
    doc = document({"pi": {"open_per_turn": 0.002, "leak": 4e6}})
    resume = next(c for c in doc.curves if c.scenario == "resume" and c.metric == "open_s")
    assert resume.exponent == pytest.approx(1.0, abs=1e-9) and resume.r2 == pytest.approx(1.0)
    peak = next(c for c in doc.curves if c.scenario == "turns" and c.metric == "peak_bytes")
    assert peak.slope == pytest.approx(4e6)
    fig = next(f for f in doc.figures if f.key == "resume.open_s@1000")
    assert fig.n == 5 and fig.p50 == pytest.approx(2.0) and fig.p50 <= fig.p95
    assert fig.ci is not None and fig.ci[0] <= fig.mean <= fig.ci[1]
    infl = {f.size: f.p50 for f in doc.figures if f.metric == "inflation"}
    assert infl[1] == pytest.approx(1.0) and infl[4] == pytest.approx(2.5)


def test_unsupported_is_never_a_zero_and_keeps_its_reason() -> None:
    doc = document({"dsh": {}})
    store = next(f for f in doc.figures if f.scenario == "store")
    assert store.status == FigureStatus.unsupported and store.p50 is None and store.values == []
    assert "cannot take a planted history" in (store.reason or "")
    assert not any(c.scenario == "store" for c in doc.curves)


def test_a_failed_repetition_is_named_and_all_failed_is_a_failed_figure() -> None:
    base = dict(agent="a", scenario="cold", metric="open_s", unit="s")
    some = figure([PerfSample(**base, rep=0, value=0.5), PerfSample(**base, rep=1, status=FigureStatus.failed,
                                                                       reason="exit 3")])
    assert some.status == FigureStatus.measured and some.n == 1 and "1 of 2 repetitions failed: exit 3" in some.reason
    assert some.ci is None  # one value: no interval, not a zero-width one
    none = figure([PerfSample(**base, rep=0, status=FigureStatus.failed, reason="exit 3")])
    assert none.status == FigureStatus.failed and none.p50 is None and none.reason == "exit 3"


def test_contention_is_carried_to_the_figure_and_its_curve() -> None:
    doc = document({"pi": {"contended": True}})
    assert all(f.host.contended for f in doc.figures if f.status == FigureStatus.measured)
    assert all(c.contended for c in doc.curves)
    calm = document({"pi": {}})
    assert not any(c.contended for c in calm.curves)
    assert not math.isnan(calm.figures[0].p50 or 0)


def test_a_scenario_s_own_repeat_caps_it_unless_fewer_are_asked() -> None:
    from assay.run.perf.runner import repetitions

    assert repetitions(None, None, 5) == 5
    assert repetitions(None, 3, 5) == 3
    assert repetitions(2, None, 5) == 2
    assert repetitions(2, 1, 5) == 1
    assert repetitions(2, 9, 5) == 2


def test_the_performance_documents_have_published_schemas() -> None:
    from assay.records.schema import json_schema

    assert "figures" in json_schema("performance")["properties"]
    assert "scenarios" in json_schema("perf-suite")["properties"]


def test_a_crash_of_the_measuring_is_a_failed_figure_not_the_end_of_the_run() -> None:
    import asyncio

    from assay.run.perf.runner import guarded
    from assay.spec.perf import Scenario

    async def broken(app, make, sc, rep):  # type: ignore[no-untyped-def]
        raise TypeError("a bug in the measuring")

    (got,) = asyncio.run(guarded(broken, None, None, Scenario(id="cold", kind="cold_start"), 0, "pi"))  # type: ignore[arg-type]
    assert got.status == FigureStatus.failed and "a bug in the measuring" in (got.reason or "")
