"""OpenTelemetry: the run's traces read back from a real OTLP backend (Phoenix) through its own client,
and the span tree checked through the SDK's in-memory exporter."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from assay.cli.main import main
from assay.observe.otel import export_run_otlp, otlp_enabled, traces_endpoint
from assay.store.rundir import RunDir
from tests.observe import servers
from tests.observe.conftest import CANARY, ObservedRun

CONTENT_KEYS = ("gen_ai.prompt", "gen_ai.completion", "gen_ai.input.messages", "gen_ai.output.messages",
                "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "input.value")


def _phoenix_spans(url: str, project: str, expect: int | None = None) -> list[dict[str, Any]]:
    from phoenix.client import Client

    client = Client(base_url=url)

    def get() -> list[dict[str, Any]] | None:
        spans = client.spans.get_spans(project_identifier=project, limit=100_000)
        return spans if spans and (expect is None or len(spans) >= expect) else None

    return servers.wait_for(get, f"phoenix project {project} holds the spans", timeout=60)


def _need_phoenix(observed: ObservedRun) -> str:
    if observed.phoenix is None:
        pytest.skip("arize-phoenix not installed (scripts/test.sh puts it in .venv-phoenix)")
    return observed.phoenix


def check_tree(spans: list[dict[str, Any]], run_dir: Path) -> None:
    """Trial count, span tree and token totals equal to the run directory's."""
    rd = RunDir(run_dir)
    results = rd.results()
    trials = {r.trial_id for r in results}
    by_id = {s["context"]["span_id"]: s for s in spans}
    roots = [s for s in spans if s["parent_id"] is None]
    assert all(r["name"] == "assay.trial" for r in roots)
    assert sorted(r["attributes"]["assay.trial_id"] for r in roots) == sorted(trials)
    assert len({s["context"]["trace_id"] for s in spans}) == len(trials)  # one trace per trial
    attempts = Counter(r.trial_id for r in results)
    for root in roots:
        kids = [s for s in spans if s["parent_id"] == root["context"]["span_id"]]
        assert [k["name"] for k in kids] == ["assay.attempt"] * attempts[root["attributes"]["assay.trial_id"]]
        [ev] = [e for e in root["events"] if e["name"] == "gen_ai.evaluation.result"]
        final = max((r for r in results if r.trial_id == root["attributes"]["assay.trial_id"]), key=lambda r: r.attempt)
        assert ev["attributes"]["gen_ai.evaluation.score.value"] == (1.0 if final.strict_pass else 0.0)
        assert ev["attributes"]["gen_ai.evaluation.score.label"] == final.end_state.value
    for s in spans:
        if s["name"].startswith(("chat", "execute_tool", "assay.setup", "invoke_agent", "assay.verify")):
            assert by_id[s["parent_id"]]["name"] == "assay.attempt", s["name"]
        assert s["context"]["trace_id"] == by_id.get(s["parent_id"], s)["context"]["trace_id"]
    chats = [s for s in spans if s["name"].startswith("chat")]
    assert chats and all(c["attributes"]["gen_ai.operation.name"] == "chat" for c in chats)
    tin = sum(c["attributes"].get("gen_ai.usage.input_tokens", 0) for c in chats)
    tout = sum(c["attributes"].get("gen_ai.usage.output_tokens", 0) for c in chats)
    assert tin == sum(r.usage.input_tokens for r in results) > 0
    assert tout == sum(r.usage.output_tokens for r in results) > 0
    assert any(c["status_code"] == "ERROR" for c in chats)  # the injected 429s are visible as failed calls
    text = json.dumps(spans)
    assert CANARY not in text and "sk-assay-" not in text  # no output, no per-attempt key
    assert not any(k in s["attributes"] for s in spans for k in CONTENT_KEYS)


def test_live_export_reads_back_from_phoenix(observed: ObservedRun) -> None:
    url = _need_phoenix(observed)
    assert observed.run_dir.joinpath("trials").is_dir()
    expect = sum(1 for _ in observed.run_dir.joinpath("trials").iterdir())
    spans = _phoenix_spans(url, observed.live_project)
    servers.wait_for(lambda: len({s["context"]["trace_id"] for s in _phoenix_spans(url, observed.live_project)}) == expect,
                     "every live trace arrived")
    check_tree(_phoenix_spans(url, observed.live_project), observed.run_dir)
    assert spans


def _memory_export(run_dir: Path) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Export the finished run into the SDK's in-memory exporter, spans in Phoenix's shape."""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    counts = export_run_otlp(run_dir, exporter=mem)
    spans = [{"name": s.name, "context": {"span_id": f"{s.context.span_id:016x}", "trace_id": f"{s.context.trace_id:032x}"},
              "parent_id": f"{s.parent.span_id:016x}" if s.parent else None, "attributes": dict(s.attributes),
              "status_code": s.status.status_code.name, "start_ns": s.start_time, "kind": s.kind.name,
              "events": [{"name": e.name, "attributes": dict(e.attributes)} for e in s.events]}
             for s in mem.get_finished_spans()]
    return counts, spans


def test_finished_run_export_is_the_live_export(observed: ObservedRun) -> None:
    """Exporting the sealed run later gives the very spans the live run sent (ids are derived)."""
    url = _need_phoenix(observed)
    counts, finished = _memory_export(observed.run_dir)
    live = _phoenix_spans(url, observed.live_project, expect=counts["spans"])

    def shape(spans: list[dict[str, Any]]) -> set[tuple]:
        return {(s["context"]["trace_id"], s["context"]["span_id"], s["parent_id"], s["name"]) for s in spans}

    assert len(live) == counts["spans"] and shape(finished) == shape(live)


def test_standard_otel_variables_are_honoured(observed: ObservedRun, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.observe.recorder import Recorder

    with Recorder({("POST", "/v1/traces"): lambda r: (200, b"")}) as rec:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rec.url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=evals")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "assay-ci")
        monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=ci")
        assert main(["export-otlp", str(observed.run_dir)]) == 0
        posts = rec.of("POST", "/v1/traces")
    assert posts and all(p.headers.get("x-team") == "evals" for p in posts)
    spans = [sp for p in posts for sp in p.spans()]
    attrs = {kv.key: kv.value.string_value for kv in spans[0][0].attributes}
    assert attrs["service.name"] == "assay-ci" and attrs["deployment.environment"] == "ci"
    roots = [sp for _res, sp in spans if not sp.parent_span_id]
    assert len(roots) == len({r.trial_id for r in observed.results})
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    assert not otlp_enabled()
    assert main(["export-otlp", str(observed.run_dir)]) == 2


def test_span_tree_through_the_sdk_in_memory_exporter(observed: ObservedRun) -> None:
    """The same checks without a backend: the SDK's own in-memory exporter receives the spans."""
    counts, spans = _memory_export(observed.run_dir)
    assert counts["spans"] == len(spans) and counts["failed"] == 0
    check_tree(spans, observed.run_dir)
    by_trace: dict[str, int] = defaultdict(int)
    for s in spans:
        by_trace[s["context"]["trace_id"]] += 1
    assert min(by_trace.values()) >= 3  # trial, attempt and at least one phase each


def test_unreachable_backend_is_a_failure_not_a_silent_loss(observed: ObservedRun, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    port = servers.free_port()  # nothing listens there
    assert main(["export-otlp", str(observed.run_dir), "--otlp", f"http://127.0.0.1:{port}"]) == 1


def test_otlp_url_is_a_base_url_and_nothing_is_sent_without_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert traces_endpoint("http://h:4318") == "http://h:4318/v1/traces"
    assert traces_endpoint("http://h:4318/v1/traces") == "http://h:4318/v1/traces"
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(var, raising=False)
    assert not otlp_enabled()
    assert main(["export-otlp", str(tmp_path)]) == 2


def test_spans_follow_the_genai_conventions(observed: ObservedRun) -> None:
    """Inference calls are CLIENT spans naming the backend that answered (not the wire format),
    every error span says its error.type, and the agent's run is an invoke_agent span."""
    _counts, spans = _memory_export(observed.run_dir)
    chats = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "chat"]
    assert chats and {s["kind"] for s in chats} == {"CLIENT"}
    answered = [s for s in chats if s["status_code"] != "ERROR"]
    assert answered and {s["attributes"]["gen_ai.provider.name"] for s in answered} == {"assay.scripted"}
    assert {s["attributes"]["assay.gateway.wire"] for s in chats} == {"openai-chat"}  # the wire is kept apart
    errors = [s for s in spans if s["status_code"] == "ERROR"]
    assert errors and all(s["attributes"].get("error.type") for s in errors)
    assert {s["kind"] for s in spans if s["attributes"].get("gen_ai.operation.name") != "chat"} == {"INTERNAL"}
    agents = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    assert agents and all(s["name"] == f"invoke_agent {s['attributes']['gen_ai.agent.name']}" for s in agents)
    assert {s["attributes"]["gen_ai.agent.name"] for s in agents} == {"flaky", "oracle", "nop"}
