"""The series themselves: one accumulator for both paths, labels without ids, integrity, no cost when unused."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from assay.cli.main import main
from assay.observe.facts import trial_facts
from assay.observe.metrics import MetricsPlugin, series_from_run
from assay.observe.prom import exposition
from assay.observe.series import RunSeries
from assay.score.trials import missing_trial
from assay.store.rundir import RunDir
from tests.conftest import ROOT, assay_env, cli_timeout
from tests.observe.conftest import ObservedRun
from tests.score.synth import attempt, write_run

ALLOWED_LABELS = {"suite", "agent", "category", "result", "kind", "severity", "le"}


def synthetic(tmp_path: Path) -> RunDir:
    rnd = random.Random(7)
    results = []
    for rep in (1, 2, 3):
        for task, cat in (("t-alpha", "code"), ("t-beta", "code"), ("t-gamma", "ops")):
            for agent in ("a1", "a2"):
                state = rnd.choice(["pass", "pass", "fail", "timeout"])
                results.append(attempt(task, cat, agent, rep, state, cost=rnd.random() / 7, tokens=rnd.randint(1, 999),
                                       tool_calls=rnd.randint(0, 9), wall=rnd.random() * 100, interventions=rep % 2))
    # a retried trial: infra error, then a pass; and incidents with hostile free text as their type
    results.append(attempt("t-delta", "ops", "a1", 1, "infra_error", retryable=True, reason="sandbox", cost=0.1))
    results.append(attempt("t-delta", "ops", "a1", 1, "pass", attempt=2, cost=0.2, incidents=[
        {"type": 'x"} evil{a="b', "severity": "critical"}, {"type": "secret sk-live-123 leaked"},
        {"type": "left_behind_process", "severity": "high"}, {"type": "wrong_side_effect", "severity": "low"}]))
    return write_run(tmp_path / "run", {"code": 2, "ops": 1}, results, planned_extra=["t-eps.base.a2.r1"])


def test_same_series_whatever_order_the_trials_finish_in(tmp_path: Path) -> None:
    rd = synthetic(tmp_path)
    finished = exposition(series_from_run(rd.path))
    manifest = rd.manifest()
    trials = [t for t in manifest.plan.trials if rd.attempts_of(t)]
    random.Random(3).shuffle(trials)
    live = RunSeries(manifest)
    for tid in trials:
        live.add(trial_facts(rd, tid))
    missing = [t for t in manifest.plan.trials if not rd.attempts_of(t)]
    assert missing == ["t-eps.base.a2.r1"]
    # a planned trial without a result: the finished run counts it as infra_error, as assay score does
    assert 'agent_eval_trials_total{agent="a2",category="?",result="infra_error",suite="synthetic"} 1.0' in finished
    assert exposition(live) != finished  # the live side has not seen it ...
    live.add(missing_trial(missing[0], {}))
    assert exposition(live) == finished  # ... and with it, every figure matches to the last digit
    fams = {f.name: f for f in text_string_to_metric_families(finished)}
    retries = {s.labels["agent"]: s.value for s in fams["agent_eval_retries"].samples if s.name.endswith("_total")}
    assert retries == {"a1": 1.0, "a2": 0.0}


def test_live_plugin_and_textfile_give_identical_text(observed: ObservedRun) -> None:
    """The live run's last state (what /metrics served at the end) is the finished run's textfile."""
    assert observed.metrics.series is not None and observed.metrics.series.trials == len({r.trial_id for r in observed.results})
    assert exposition(observed.metrics.series) == exposition(series_from_run(observed.run_dir))


def test_labels_hold_no_ids_and_no_free_text(tmp_path: Path) -> None:
    rd = synthetic(tmp_path)
    text = exposition(series_from_run(rd.path))
    ids = set(rd.manifest().plan.trials) | {t.split(".")[0] for t in rd.manifest().plan.trials}
    kinds = set()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            assert set(s.labels) <= ALLOWED_LABELS, s
            assert not (set(s.labels.values()) & ids), s
            kinds.add(s.labels.get("kind"))
            assert s.labels.get("severity") in (None, "low", "medium", "high", "critical")
    assert kinds - {None} == {"other", "left_behind_process", "wrong_side_effect"}
    assert "sk-live-123" not in text and "evil" not in text


def test_a_tampered_run_is_refused_and_nothing_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = synthetic(tmp_path)
    result = next((rd.path / "trials").glob("*/attempts/1/result.json"))
    doc = json.loads(result.read_text())
    doc["end_state"] = "pass"
    result.write_text(json.dumps(doc))
    out = tmp_path / "m.prom"
    assert main(["metrics", str(rd.path), "--textfile", str(out)]) == 3
    assert not out.exists() and "integrity" in capsys.readouterr().err


def test_metrics_cli_writes_the_textfile_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rd = synthetic(tmp_path)
    out = tmp_path / "prom" / "assay.prom"
    assert main(["metrics", str(rd.path), "--textfile", str(out)]) == 0
    assert out.read_text() == exposition(series_from_run(rd.path))
    assert [p.name for p in out.parent.iterdir()] == ["assay.prom"]  # atomic: no temporary file left
    assert main(["metrics", str(tmp_path / "nowhere")]) == 2
    assert "not a run directory" in capsys.readouterr().err
    assert main(["metrics", str(rd.path), "--textfile", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_final_scrape_wait_is_bounded_when_nobody_scrapes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rd = synthetic(tmp_path)
    plugin = MetricsPlugin(0, final_scrape_s=0.2)
    plugin.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
    r = rd.results()[0]
    plugin.assay_attempt_finished(result=r, final=True)
    import httpx

    body = httpx.get(plugin.server.url, timeout=5).text  # a scrape sees the trial
    assert f'agent="{r.agent}"' in body and plugin.server.page.wait_served(5)
    plugin.assay_attempt_finished(result=rd.results()[1], final=True)  # an update nobody scraped
    plugin.assay_run_finished(run_dir=rd, results=[])
    assert plugin.server is None and "was not scraped" in caplog.text and plugin.last_scraped is False


def test_a_run_without_observe_options_loads_none_of_it(calc_suite: Path, tmp_path: Path) -> None:
    code = ("import sys; from assay.cli.main import main; "
            f"rc = main(['run', {str(calc_suite)!r}, '-a', 'oracle', '--sandbox', 'host', '-q', '-o', {str(tmp_path / 'r')!r}]); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'prometheus_client', 'opentelemetry', 'langfuse', 'grafana_foundation_sdk'})); sys.exit(rc)")
    env = {k: v for k, v in assay_env().items() if not k.startswith("OTEL_")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=cli_timeout())
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"


def test_a_trial_that_cannot_be_read_back_is_logged_and_the_run_goes_on(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    from assay.observe.otel import OtlpPlugin
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    rd = synthetic(tmp_path)
    r = rd.results()[0]
    rd.attempt_dir(r.trial_id, r.attempt).joinpath("result.json").write_text("{not json")  # broken under the plugin
    metrics, otlp = MetricsPlugin(0), OtlpPlugin(exporter=InMemorySpanExporter())
    for p in (metrics, otlp):
        p.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
        p.assay_attempt_finished(result=r, final=True)  # must not raise
        p.assay_run_finished(run_dir=rd, results=[])
    assert metrics.errors == 1 and metrics.series.trials == 0 and otlp.failed == 1
    assert f"trial {r.trial_id} not counted" in caplog.text and f"trial {r.trial_id} not exported" in caplog.text


def test_metrics_page_is_rendered_once_per_update_however_often_it_is_scraped(tmp_path: Path) -> None:
    import httpx

    rd = synthetic(tmp_path)
    plugin = MetricsPlugin(0)
    plugin.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
    try:
        page = plugin.server.page
        bodies = {httpx.get(plugin.server.url, timeout=5).text for _ in range(5)}
        assert len(bodies) == 1 and page.renders == 1  # five scrapes, one rendering
        plugin.assay_attempt_finished(result=rd.results()[0], final=True)
        assert not page.last_served  # the update is not delivered until a scrape received it
        after = httpx.get(plugin.server.url, timeout=5)
        assert after.headers["content-length"] == str(len(after.content)) and page.renders == 2
        assert page.wait_served(5) and after.text not in bodies  # sent() follows the bytes: a condition wait
    finally:
        plugin.close()


def test_a_scrape_that_broke_off_does_not_count_as_delivered(tmp_path: Path) -> None:
    rd = synthetic(tmp_path)
    plugin = MetricsPlugin(0)
    plugin.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
    try:
        page = plugin.server.page
        update, body = page.body()  # what the handler does at a scrape: the page is rendered...
        assert body and not page.last_served  # ...but rendering is not delivery (it was before)
        page.sent(update, ok=False)  # the scraper gave up before the response was written
        assert not page.last_served and not page.wait_served(0)
        page.body()
        page.sent(update, ok=True)
        assert page.last_served and page.wait_idle(0)
    finally:
        plugin.close()


def test_the_final_state_is_written_to_the_textfile_and_an_unscraped_end_is_named(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rd = synthetic(tmp_path)
    out = tmp_path / "collector" / "assay.prom"
    plugin = MetricsPlugin(0, final_scrape_s=0.1, textfile=out)
    plugin.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
    results = rd.results()
    for r in results:
        plugin.assay_attempt_finished(result=r, final=True)
    plugin.assay_run_finished(run_dir=rd, results=[])
    assert plugin.last_scraped is False
    assert "was not scraped" in caplog.text and str(out) in caplog.text  # says so, and where the state is
    assert out.read_text() == exposition(plugin.series)
    # without a port: nothing served, the textfile alone (a batch job's way to Prometheus)
    batch = MetricsPlugin(None, textfile=tmp_path / "batch.prom")
    assert batch.start() == ""
    batch.assay_run_started(run_dir=rd, manifest=rd.manifest(), planned=1, pending=1)
    batch.assay_attempt_finished(result=results[0], final=True)
    batch.assay_run_finished(run_dir=rd, results=[])
    assert batch.server is None and 'agent_eval_trials_total{' in (tmp_path / "batch.prom").read_text()


def test_run_refuses_a_metrics_textfile_it_could_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path), "-a", "oracle", "--metrics-textfile", str(tmp_path / "no" / "such" / "a.prom")]) == 2
    err = capsys.readouterr().err
    assert "--metrics-textfile" in err and "existing directory" in err
