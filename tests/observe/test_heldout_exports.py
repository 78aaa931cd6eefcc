"""The observe exports withhold a held-out task: no span, trace or per-trial score of it reaches
an OTLP backend (live or after the run) or Langfuse, and the metrics carry no task detail; its
trials still count in the aggregates (tests/heldout_run.py plants the markers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.observe.metrics import write_run_textfile
from assay.observe.otel import OtlpPlugin, export_run_otlp
from tests.heldout_run import MARKS, PROMPT_MARK, held_out_run
from tests.observe.recorder import Recorder
from tests.observe.test_langfuse import FakeLangfuse, _env


def _otlp_routes() -> dict:
    return {("POST", "/v1/traces"): lambda r: (200, b"")}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    """The run, exported live over OTLP/HTTP to a recording server."""
    with Recorder(_otlp_routes()) as rec:
        run = held_out_run(tmp_path_factory.mktemp("heldout-obs"), plugins=[OtlpPlugin(rec.url)])
        yield run, list(rec.requests)


def _bodies(requests) -> bytes:
    return b"".join(r.body for r in requests)


def test_live_otlp_export_sends_no_held_out_span(live) -> None:
    run, requests = live
    body = _bodies(requests)
    assert requests and b"open1" in body  # the open trial was exported, with its details
    assert not [m for m in MARKS if m.encode() in body]
    assert b"held1" not in body


def test_finished_run_otlp_export_withholds_and_counts(live) -> None:
    run, _ = live
    with Recorder(_otlp_routes()) as rec:
        counts = export_run_otlp(run, rec.url)
        body = _bodies(rec.requests)
    assert (counts["trials"], counts["withheld"], counts["failed"]) == (1, 1, 0)
    assert b"open1" in body and b"held1" not in body
    assert not [m for m in MARKS if m.encode() in body]


def test_langfuse_export_withholds_traces_and_scores_of_held_out_trials(live, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.observe.langfuse_export import export_langfuse

    run, _ = live
    lf = FakeLangfuse()
    with Recorder(lf.routes()) as rec:
        _env(monkeypatch, rec.url)
        out = export_langfuse(run)
        body = _bodies(rec.requests)
    assert out.withheld == 1 and out.traces == 1
    assert not [m for m in MARKS if m.encode() in body]
    assert not [s for s in lf.scores.values() if "held1" in str(s)]  # no per-trial score of it
    run_scores = [s for s in lf.scores.values() if s["name"] == "strict_rate"]
    assert run_scores and run_scores[0]["value"] == 1.0  # the run's rate counts both tasks (2/2)
    # the dataset item of the held-out task names its prompt by digest only
    assert PROMPT_MARK.encode() not in body and any(i["input"]["task_id"] == "held1" for i in lf.items.values())


def test_metrics_textfile_carries_no_task_detail_and_counts_it(live, tmp_path: Path) -> None:
    run, _ = live
    text = write_run_textfile(run, tmp_path / "m.prom").read_text()
    assert not [m for m in MARKS if m in text] and "held1" not in text
    line = next(ln for ln in text.splitlines() if ln.startswith("agent_eval_trials_total{") and 'result="pass"' in ln)
    assert line.rstrip().endswith(" 2.0")  # both trials counted
