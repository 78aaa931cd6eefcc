"""Langfuse export against a local server that behaves like Langfuse's public API (upsert by id,
answers built with the SDK's own models) and records every request. The real server needs
Postgres, ClickHouse, Redis and S3 and cannot run here."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime, timezone
from typing import Any

import pytest

from assay.cli.main import main
from assay.observe.langfuse_export import export_langfuse
from langfuse.api.core.pydantic_utilities import parse_obj_as  # how the SDK reads wire JSON (camelCase)

from tests.observe.conftest import CANARY, REPEAT, ObservedRun
from tests.observe.recorder import Recorder, Request

PK, SK = "pk-lf-test", "sk-lf-test"


class FakeLangfuse:
    """State keyed like Langfuse's: datasets by name, items, spans and scores by id."""

    def __init__(self, fail_scores: bool = False):
        self.datasets: dict[str, dict] = {}
        self.items: dict[str, dict] = {}
        self.spans: dict[tuple[str, str], Any] = {}
        self.scores: dict[str, dict] = {}
        self.fail_scores = fail_scores

    def routes(self) -> dict[tuple[str, str], Any]:
        return {("GET", "/api/public/projects"): self.projects, ("POST", "/api/public/v2/datasets"): self.dataset,
                ("POST", "/api/public/dataset-items"): self.item, ("POST", "/api/public/otel/v1/traces"): self.otel,
                ("POST", "/api/public/scores"): self.score}

    @staticmethod
    def _now() -> datetime:
        return datetime(2026, 1, 1, tzinfo=timezone.utc)

    def projects(self, r: Request) -> tuple[int, Any]:
        from langfuse.api import Organization, Project, Projects

        return 200, Projects(data=[Project(id="proj-1", name="assay", organization=Organization(id="org-1", name="o"),
                                           metadata={})]).model_dump(by_alias=True, mode="json")

    def dataset(self, r: Request) -> tuple[int, Any]:
        from langfuse.api import CreateDatasetRequest, Dataset

        req = parse_obj_as(CreateDatasetRequest, r.json())
        ds = Dataset(id="ds-" + hashlib.sha256(req.name.encode()).hexdigest()[:12], name=req.name,
                     description=req.description, metadata=req.metadata, project_id="proj-1",
                     created_at=self._now(), updated_at=self._now())
        self.datasets[req.name] = ds.model_dump(by_alias=True, mode="json")
        return 200, self.datasets[req.name]

    def item(self, r: Request) -> tuple[int, Any]:
        from langfuse.api import CreateDatasetItemRequest, DatasetItem, DatasetStatus

        req = parse_obj_as(CreateDatasetItemRequest, r.json())
        ds = self.datasets[req.dataset_name]
        it = DatasetItem(id=req.id, status=DatasetStatus.ACTIVE, input=req.input, expected_output=req.expected_output,
                         metadata=req.metadata, dataset_id=ds["id"], dataset_name=req.dataset_name,
                         created_at=self._now(), updated_at=self._now(), media_references=[])
        self.items[req.id] = it.model_dump(by_alias=True, mode="json")
        return 200, self.items[req.id]

    def otel(self, r: Request) -> tuple[int, Any]:
        for _res, sp in r.spans():
            self.spans[(sp.trace_id.hex(), sp.span_id.hex())] = sp
        return 200, b""

    def score(self, r: Request) -> tuple[int, Any]:
        from langfuse.api import CreateScoreBatchResults, CreateScoreRequest

        if self.fail_scores:
            return 500, {"message": "clickhouse unavailable"}
        batch = [parse_obj_as(CreateScoreRequest, x) for x in r.json()]
        for sc in batch:
            self.scores[sc.id] = sc.model_dump(by_alias=True, mode="json", exclude_none=True)
        return 200, CreateScoreBatchResults(accepted=len(batch), rejected=0, errors=[]).model_dump(by_alias=True, mode="json")

    def sizes(self) -> dict[str, int]:
        return {"datasets": len(self.datasets), "items": len(self.items), "spans": len(self.spans), "scores": len(self.scores)}


def _env(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PK)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SK)
    monkeypatch.setenv("LANGFUSE_BASE_URL", url)


def _attr(sp: Any, key: str) -> Any:
    for kv in sp.attributes:
        if kv.key == key:
            v = kv.value
            return v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value") else v
    return None


def test_export_builds_dataset_experiments_traces_and_scores(observed: ObservedRun,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    lf = FakeLangfuse()
    with Recorder(lf.routes()) as rec:
        _env(monkeypatch, rec.url)
        assert main(["export-langfuse", str(observed.run_dir)]) == 0
        first = lf.sizes()
        first_bodies = sorted(r.body for r in rec.requests if r.path != "/api/public/otel/v1/traces")
        first_scores = dict(lf.scores)
        # re-export: every object is upserted by the same id with the same content; nothing is added
        n = len(rec.requests)
        assert main(["export-langfuse", str(observed.run_dir)]) == 0
        assert lf.sizes() == first and lf.scores == first_scores
        assert sorted(r.body for r in rec.requests[n:] if r.path != "/api/public/otel/v1/traces") == first_bodies
        auth = "Basic " + base64.b64encode(f"{PK}:{SK}".encode()).decode()
        assert all(r.headers.get("authorization") == auth for r in rec.requests)
        assert all(r.path in {p for _m, p in lf.routes()} for r in rec.requests)

    results = observed.results
    finals = {}
    for r in results:
        if r.trial_id not in finals or r.attempt > finals[r.trial_id].attempt:
            finals[r.trial_id] = r
    # dataset items: the task variants, keyed by digest
    [ds] = lf.datasets.values()
    assert ds["name"] == "assay/obs"
    variants = {(r.task_id, r.variant) for r in results}
    assert {(i["input"]["task_id"], i["input"]["variant"]) for i in lf.items.values()} == variants
    assert all(i["metadata"]["task_digest"] for i in lf.items.values())
    # one experiment per agent and repetition; every trial's root span is in one, on its item
    roots = [sp for (_t, _s), sp in lf.spans.items() if not sp.parent_span_id]
    assert len(roots) == len(finals)
    exps = {_attr(sp, "langfuse.experiment.name") for sp in roots}
    run_id = results[0].run_id
    assert exps == {f"{run_id} {a} r{k}" for a in ("flaky", "oracle", "nop") for k in range(1, REPEAT + 1)}
    assert len({_attr(sp, "langfuse.experiment.id") for sp in roots}) == len(exps)
    for sp in roots:
        assert _attr(sp, "langfuse.experiment.item.id") in lf.items
        assert _attr(sp, "langfuse.experiment.dataset.id") == ds["id"]
        assert _attr(sp, "langfuse.experiment.item.root_observation_id") == sp.span_id.hex()
    per_experiment = {}
    for sp in roots:
        per_experiment.setdefault(_attr(sp, "langfuse.experiment.name"), []).append(_attr(sp, "langfuse.experiment.item.id"))
    assert all(len(v) == len(set(v)) == len(variants) for v in per_experiment.values())  # each item once per experiment
    # scores: strict, safe, diagnostic, danger per trial; assay's strict rate per experiment
    trace_of = {_attr(sp, "assay.trial_id"): sp.trace_id.hex() for sp in roots}
    trial_scores = [s for s in lf.scores.values() if "traceId" in s]
    assert len(trial_scores) == 4 * len(finals)
    by = {(s["traceId"], s["name"]): s["value"] for s in trial_scores}
    for tid, r in finals.items():
        assert by[(trace_of[tid], "strict")] == (1.0 if r.strict_pass else 0.0)
        assert by[(trace_of[tid], "diagnostic")] == r.diagnostic_score
    run_scores = [s for s in lf.scores.values() if "datasetRunId" in s]
    assert len(run_scores) == len(exps) and {s["datasetRunId"] for s in run_scores} == {_attr(sp, "langfuse.experiment.id") for sp in roots}
    assert all(len(s["metadata"]["ci95"]) == 2 for s in run_scores)
    assert CANARY not in json.dumps(lf.items) + json.dumps(lf.scores) + str(list(lf.spans.values()))


def test_missing_keys_are_a_usage_error_and_nothing_is_sent(observed: ObservedRun, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    lf = FakeLangfuse()
    with Recorder(lf.routes()) as rec:
        _env(monkeypatch, rec.url)
        monkeypatch.delenv("LANGFUSE_SECRET_KEY")
        assert main(["export-langfuse", str(observed.run_dir)]) == 2
        assert rec.requests == []
    assert "LANGFUSE_SECRET_KEY" in capsys.readouterr().err


def test_a_server_error_is_reported_not_a_traceback(observed: ObservedRun, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lf = FakeLangfuse(fail_scores=True)
    with Recorder(lf.routes()) as rec:
        _env(monkeypatch, rec.url)
        assert main(["export-langfuse", str(observed.run_dir)]) == 1
    err = capsys.readouterr().err
    assert "answered 500" in err and "Traceback" not in err
    with pytest.raises(Exception, match="cannot be reached"):
        from assay.observe.langfuse_export import LangfuseSettings

        export_langfuse(observed.run_dir, LangfuseSettings(PK, SK, rec.url))  # the server is gone now


def test_langfuse_is_an_export_target_of_assay_export(observed: ObservedRun, monkeypatch: pytest.MonkeyPatch) -> None:
    """Declared under the ``assay.export_targets`` entry points, so `assay export RUN --to langfuse` finds it."""
    from importlib.metadata import entry_points

    from assay.observe.langfuse_export import to_langfuse

    [ep] = [e for e in entry_points(group="assay.export_targets") if e.name == "langfuse"]
    assert ep.load() is to_langfuse
    lf = FakeLangfuse()
    with Recorder(lf.routes()) as rec:
        _env(monkeypatch, rec.url)
        message = to_langfuse(observed.run_dir, None)
        if _has_export_command():
            assert main(["export", str(observed.run_dir), "--to", "langfuse"]) == 0
    assert "to Langfuse dataset assay/obs" in message and lf.sizes()["scores"] > 0


def _has_export_command() -> bool:
    from assay._optional import optional_import

    return optional_import("assay.cli.export") is not None
