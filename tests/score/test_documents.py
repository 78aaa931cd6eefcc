"""The typed score document: same JSON on disk, old files load, null where there is no data,
what was measured named, and a published schema that the real documents satisfy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from assay.records.manifest import GatewayRecord
from assay.records.scores import ScoreDocument
from assay.report.markdown import render_summary
from assay.score import read_score, score_run, write_score
from assay.score.measured import NOMINAL_FLAG, SCRIPTED_FLAG
from tests.conftest import cli_timeout
from tests.score.synth import attempt, write_run

#: the keys of assay.score/2 as documented (docs/scoring.md §11), in order; `measured` and `performance`
#: (null without an `assay perf` folder beside the run, docs/performance.md) are compatible additions
KEYS = ["isolation", "schema", "scorer_version", "rules_digest", "run_id", "suite", "scored_at", "weights", "inputs",
        "measured", "security", "agents", "tasks", "trials", "trials_file", "recovery", "suspect_passes",
        "audited_strict", "controls", "deviations", "score_version", "performance"]
AGENT_KEYS = {"trials", "skipped", "scored", "passes", "strict_rate", "strict_ci", "strict_rate_micro",
              "strict_ci_micro", "pass1", "safe_rate", "pass_hat_k", "pass_at_k", "danger", "danger_trials",
              "categories_missing", "availability", "categories", "capability", "security", "efficiency", "recovery",
              "attack", "interventions", "cleanup_failures"}


def assay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout())


def _mixed_run(path: Path) -> Path:
    rs = [attempt("t1", "code", "a", 1, "pass", cost=0.1, incidents=[{"type": "secret_leak", "severity": "low",
                                                                      "summary": "x", "evidence": {"where": "outbox"}}]),
          attempt("t1", "code", "a", 2, "fail"), attempt("t2", "ops", "a", 1, "infra_error", reason="sandbox")]
    return write_run(path, {"code": 1, "ops": 1}, rs).path


def test_score_file_keeps_its_json_shape_and_reads_back_typed(tmp_path: Path) -> None:
    run = _mixed_run(tmp_path / "r")
    path = write_score(run)
    data = json.loads(path.read_text())
    assert list(data) == KEYS
    assert set(data["agents"]["a"]) == AGENT_KEYS
    assert data["schema"] == "assay.score/2" and data["score_version"] == 1
    assert data["security"]["warnings"][0]["evidence"] == {"where": "outbox"}
    doc = read_score(path)
    assert isinstance(doc, ScoreDocument) and doc.score_version == 1
    assert doc.agents["a"].strict_rate == pytest.approx(0.25)  # code 1/2, ops 0/1 (infra stays in), macro
    from tests.score.test_score_v2 import figures

    assert figures(doc) == figures(score_run(run))


def test_a_score_file_written_before_the_typed_document_still_loads(tmp_path: Path) -> None:
    run = _mixed_run(tmp_path / "r")
    data = json.loads(write_score(run).read_text())
    del data["measured"]
    for row in data["tasks"]:
        del row["task_digest"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data))
    doc = read_score(old)
    assert doc.measured is None and doc.tasks[0].task_digest is None
    assert "measured: not recorded" in render_summary(doc)


def test_a_damaged_score_file_is_refused_naming_the_field(tmp_path: Path) -> None:
    from assay.errors import IntegrityError

    run = _mixed_run(tmp_path / "r")
    data = json.loads(write_score(run).read_text())
    data["agents"]["a"]["passes"] = "many"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(IntegrityError, match="agents.a.passes"):
        read_score(bad)


def test_zero_scored_trials_have_no_interval_and_no_availability(tmp_path: Path) -> None:
    rs = [attempt("t1", "code", "a", 1, "skipped", reason="unsupported"), attempt("t2", "code", "b", 1, "pass")]
    doc = score_run(write_run(tmp_path / "r", {"code": 1}, rs).path)
    a = doc.agents["a"]
    assert a.scored == 0 and a.strict_rate is None and a.strict_ci == (None, None)
    assert a.strict_ci_micro == (None, None) and a.availability.rate is None
    assert a.categories["code"].strict_ci == (None, None)
    assert next(t for t in doc.tasks if t.agent == "a").strict_ci == (None, None)
    assert doc.agents["b"].strict_ci_micro[1] == 1.0  # one pass: a real interval
    assert "a: capability" in render_summary(doc) and "availability n/a" in render_summary(doc)


def test_what_was_measured_is_named_and_plumbing_runs_flagged(tmp_path: Path) -> None:
    gw = GatewayRecord(backend="scripted", model="assay-scripted",
                       prices={"assay-scripted": {"input": 1.0, "output": 2.0, "nominal": True}})
    run = write_run(tmp_path / "r", {"code": 1}, [attempt("t1", "code", "a", 1, "pass")], gateway=gw).path
    doc = score_run(run)
    m = doc.measured
    assert m is not None and (m.gateway_backend, m.model, m.prices, m.sandbox) == ("scripted", "assay-scripted",
                                                                                    "nominal", "host")
    assert m.flags == [SCRIPTED_FLAG, NOMINAL_FLAG]
    text = render_summary(doc)
    assert "measured: scripted model assay-scripted; sandbox host" in text and SCRIPTED_FLAG in text
    plain = score_run(write_run(tmp_path / "p", {"code": 1}, [attempt("t1", "code", "a", 1, "pass")]).path)
    assert plain.measured is not None and plain.measured.flags == [] and plain.measured.prices == "none"


@pytest.mark.parametrize("kind", ["score", "report", "compare"])
def test_published_schemas_validate_real_documents(tmp_path: Path, kind: str) -> None:
    proc = assay("schema", kind)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    run = _mixed_run(tmp_path / "r")
    if kind == "score":
        doc = json.loads(write_score(run).read_text())
    else:
        from assay.report import build_report

        report = json.loads(build_report(run, "json", compare=run))
        doc = report if kind == "report" else report["compare"]
    jsonschema.validate(doc, schema)
    broken = {**doc, "schema": 7}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)
