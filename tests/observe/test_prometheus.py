"""Prometheus scraping a live run and the textfile of the finished run; PromQL against assay score."""

from __future__ import annotations

import math

import pytest

from assay.observe.dashboard import MACRO_RATE, SUCCESS_RATE, build_dashboard, dashboard_json, panel_queries
from assay.observe.metrics import write_run_textfile
from assay.score.engine import score_run
from tests.observe import servers
from tests.observe.conftest import SUITE, ObservedRun


def _prom(observed: ObservedRun) -> servers.Prometheus:
    if observed.prom is None:
        pytest.skip("prometheus not installed (Debian package prometheus; scripts/test.sh installs it)")
    return observed.prom


def _q(expr: str, job: str, window: str = "1h") -> str:
    return expr.replace('suite="$suite"', f'job="{job}",suite="{SUITE}"').replace("$__range", window)


@pytest.fixture(scope="module")
def score(observed: ObservedRun) -> dict:
    return score_run(observed.run_dir).dump()  # the score document as it is written (JSON keys)


def test_seeds_success_rate_query_equals_assay_strict_rate(observed: ObservedRun, score: dict) -> None:
    prom = _prom(observed)
    agents = score["agents"]
    # the seeds' query verbatim, over 24h as they wrote it
    seeds = prom.by(_q(SUCCESS_RATE, "live", "24h"), at=observed.finished_at)
    assert set(seeds) == {"flaky", "oracle", "nop"}
    for agent, value in seeds.items():
        a = agents[agent]
        assert value == pytest.approx(a["passes"] / a["scored"], abs=1e-12), agent  # exact counts
        assert round(value, 6) == a["strict_rate_micro"], agent  # the score document keeps 6 digits
    # the flaky agent passes 4 of 9: a rate strictly between 0 and 1, so the comparison compared something
    assert 0 < seeds["flaky"] < 1 and seeds["oracle"] == 1 and seeds["nop"] == 0
    # the macro rate (assay's headline strict rate) by PromQL, with the frozen category weights
    macro = prom.by(_q(MACRO_RATE, "live", "24h"), at=observed.finished_at)
    for agent, value in macro.items():
        # the scorer averages category rates already rounded to 6 digits, hence 1e-6
        assert value == pytest.approx(agents[agent]["strict_rate"], abs=1e-6), agent
    assert macro["flaky"] != pytest.approx(seeds["flaky"])  # the two rates differ on this suite: both were checked
    # assay's own figures as gauges, with the interval
    for name, key in (("strict_rate", lambda a: a["strict_rate"]), ("strict_rate_ci_low", lambda a: a["strict_ci"][0]),
                      ("strict_rate_ci_high", lambda a: a["strict_ci"][1])):
        got = prom.by(f'agent_eval_{name}{{job="live",suite="{SUITE}"}}', at=observed.finished_at)
        assert got == {a: pytest.approx(key(agents[a]), abs=1e-9) for a in agents}, name


def test_every_dashboard_panel_query_returns_data(observed: ObservedRun, score: dict) -> None:
    prom = _prom(observed)
    queries = panel_queries(dashboard_json())
    assert len({t for t, _ in queries}) == 8
    for title, expr in queries:
        rows = prom.query(_q(expr, "live"), at=observed.finished_at)
        agents = {r["metric"].get("agent") for r in rows}
        assert agents == {"flaky", "oracle", "nop"}, (title, expr, rows)
    # a few panels checked against the run's facts, not only for presence
    at = observed.finished_at
    gate = prom.by(_q(dict(queries)["Security gate"], "live"), at=at)
    assert gate == {a: float(score["agents"][a]["security"]["gate"] == "FAILED") for a in score["agents"]}
    assert gate["flaky"] == 1.0  # it leaves a process behind on o1
    cleanup = dict(queries)["Cleanup failures"]
    # increase() extrapolates to the window's edges (by at most half a scrape interval): counts are
    # whole numbers only after rounding; ratios of series scraped together are exact
    got = {a: round(v) for a, v in prom.by(_q(cleanup, "live"), at=at).items()}
    assert got == {a: score["agents"][a]["cleanup_failures"] for a in score["agents"]} and got["flaky"] == 3
    recovery = dict(queries)["Failure recovery"]
    got = prom.by(_q(recovery, "live"), at=at)
    assert got["flaky"] == pytest.approx(score["agents"]["flaky"]["recovery"]["rate"], abs=1e-6)
    assert math.isnan(got["oracle"])  # no model calls, so no fault was ever injected: 0/0, not 0
    cost = dict(queries)["Cost per success"]
    spent = sum(r.usage.cost_usd for r in observed.results if r.agent == "flaky")  # every attempt
    assert spent > 0  # the score document rounds cost to 6 digits, too coarse here: compare with the raw sum
    assert prom.by(_q(cost, "live"), at=at)["flaky"] == pytest.approx(spent / score["agents"]["flaky"]["passes"], rel=1e-9)


def test_textfile_of_the_finished_run_holds_the_live_series(observed: ObservedRun, score: dict) -> None:
    prom = _prom(observed)
    if "textfile" not in {r["labels"]["job"] for r in _targets(prom)}:
        pytest.skip("node-exporter not installed (Debian package prometheus-node-exporter)")
    total = len(observed.results and {r.trial_id for r in observed.results})
    write_run_textfile(observed.run_dir, observed.textfile_dir / "assay.prom")
    servers.wait_for(lambda: prom.by(f'sum(agent_eval_trials_total{{job="textfile",suite="{SUITE}"}})', "") == {"": total},
                     "node-exporter serves the textfile")
    assert prom.by('node_textfile_scrape_error{job="textfile"}', "") == {"": 0.0}
    live = _all_series(prom, "live", observed.finished_at)
    text = _all_series(prom, "textfile", None)
    assert live and live == text
    # the instant form of the seeds' query over the textfile equals assay's micro rate
    ratio = prom.by('sum by (agent) (agent_eval_trials_total{job="textfile",result="pass"}) / '
                    'sum by (agent) (agent_eval_trials_total{job="textfile",result!="skipped"})')
    assert ratio == {a: pytest.approx(score["agents"][a]["strict_rate_micro"], abs=1e-6) for a in score["agents"]}


def _targets(prom: servers.Prometheus) -> list[dict]:
    import httpx

    return httpx.get(f"{prom.url}/api/v1/targets", timeout=10).json()["data"]["activeTargets"]


def _all_series(prom: servers.Prometheus, job: str, at: float | None) -> dict[tuple, float]:
    rows = prom.query(f'{{__name__=~"agent_eval_.+",job="{job}"}}', at)
    out = {}
    for r in rows:
        # node-exporter re-renders bucket bounds ("1.0" -> "1"): compare them as numbers
        labels = tuple(sorted((k, str(float(v)) if k == "le" else v) for k, v in r["metric"].items()
                              if k not in ("job", "instance")))
        out[labels] = float(r["value"][1])
    return out


def test_dashboard_is_the_seeds_home_page_with_links_to_the_report() -> None:
    d = build_dashboard(report_url="https://ci.example/run/reports/report.html")
    titles = [p.title for p in d.panels]
    assert titles == ["Strict success rate (95% interval)", "Category heatmap", "Security gate", "Cost per success",
                      "P95 latency of successes (histogram estimate)", "Failure recovery", "Human intervention per success", "Cleanup failures"]
    import json

    doc = json.loads(dashboard_json(report_url="https://ci.example/r.html"))
    for p in doc["panels"]:
        links = p["fieldConfig"]["defaults"]["links"]
        assert links and links[0]["url"].startswith("${report}#"), p["title"]
    assert doc["panels"][1]["fieldConfig"]["defaults"]["links"][0]["url"].endswith(
        "#cat-${__field.labels.agent}-${__field.labels.category}")
    report_var = next(v for v in doc["templating"]["list"] if v["name"] == "report")
    assert "https://ci.example/r.html" in json.dumps(report_var)
    for _title, expr in panel_queries(doc):
        assert 'suite="$suite"' in expr and "trial_id" not in expr and "task" not in expr


def test_gauge_panels_keep_the_last_state_once_the_run_and_its_exporter_are_gone(observed: ObservedRun,
                                                                               score: dict) -> None:
    prom = _prom(observed)
    assert observed.metrics.last_scraped is True  # the end of the run reached Prometheus
    # the exporter closed with the run: once Prometheus saw it down, the live series are stale
    servers.wait_for(lambda: prom.by('up{job="live"}', "") == {"": 0.0}, "prometheus saw the live target go")
    assert prom.query(f'agent_eval_strict_rate{{job="live",suite="{SUITE}"}}') == []  # a plain selector: blank
    queries = dict(panel_queries(dashboard_json()))
    gate = prom.by(_q(queries["Security gate"], "live"))
    assert gate == {a: float(score["agents"][a]["security"]["gate"] == "FAILED") for a in score["agents"]}
    strict = next(e for t, e in panel_queries(dashboard_json()) if t.startswith("Strict") and "strict_rate{" in e)
    assert prom.by(_q(strict, "live")) == {a: pytest.approx(score["agents"][a]["strict_rate"], abs=1e-9)
                                           for a in score["agents"]}


def test_the_final_state_written_at_the_end_equals_the_finished_run(observed: ObservedRun) -> None:
    from assay.observe.metrics import series_from_run
    from assay.observe.prom import exposition

    final = observed.textfile_dir.parent / "final" / "assay.prom"
    assert final.read_text() == exposition(series_from_run(observed.run_dir))


def test_p95_panel_says_it_is_a_histogram_estimate() -> None:
    import json

    (p95,) = [p for p in json.loads(dashboard_json())["panels"] if p["title"].startswith("P95")]
    assert "estimate" in p95["title"] and "Approximate" in p95["description"]
