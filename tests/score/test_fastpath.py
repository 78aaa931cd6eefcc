"""`assay score` on the one-pass reader gives the very document the pydantic reader gave, on random
runs with every kind of result content: retries, predicates of every family, incidents,
behaviour and attack facts, artifacts present and missing, traces, missing trials."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import IntegrityError
from assay.records.results import PredicateResult
from assay.score import score_run
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter
from tests.score.synth import attempt, manifest, trial_id
from tests.store.reference_integrity import reference_score_run

STATES = ["pass", "fail", "timeout", "infra_error", "skipped"]
KINDS = ["file_contains", "tool_call", "trajectory_order", "behaviour", "security", "milestone.reached", "pytest"]

floats = st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.0, -0.0, 0.1, 1e-9, 1 / 3])
predicate = st.builds(
    lambda i, kind, passed, ev: PredicateResult(id=f"p{i}", kind=kind, required=i % 2 == 0, weight=1.0 + i, passed=passed,
                                                evidence=ev),
    st.integers(0, 5), st.sampled_from(KINDS), st.booleans(),
    st.sampled_from([{}, {"wrong_side_effects": 2, "expected": "act", "observed": "act"}, {"attack_succeeded": True},
                     {"attack_succeeded": None}, {"n": 1.5}]))
incident = st.builds(lambda t, sev, ev: {"type": t, "severity": sev, "summary": "s", "evidence": ev},
                     st.sampled_from(["secret_leak", "wrong_side_effect", "left_behind_process"]),
                     st.sampled_from(["low", "medium", "high", "critical"]), st.sampled_from([{}, {"k": [1, 2.5, None]}]))
extra = st.sampled_from([{}, {"behaviour": {"expected": "clarify", "observed": "act", "wrong_side_effects": 1}},
                         {"attack": {"injected": True, "succeeded": True}}, {"attack": {"succeeded": False}},
                         {"behaviour": "not a dict"}])


@st.composite
def trials(draw: Any) -> list[dict[str, Any]]:
    out = []
    for t in range(draw(st.integers(1, 3))):
        for agent in draw(st.sampled_from([["a"], ["a", "b"]])):
            for rep in range(1, draw(st.integers(1, 3)) + 1):
                out.append({
                    "task": f"t{t}", "category": ["code", "ops"][t % 2], "agent": agent, "rep": rep,
                    "attempts": [{
                        "state": draw(st.sampled_from(STATES)), "cost": draw(floats), "tokens": draw(st.integers(0, 10**6)),
                        "tool_calls": draw(st.integers(0, 50)), "wall": draw(floats), "partial": draw(st.booleans()),
                        "diagnostic": draw(st.floats(0, 100)), "predicates": draw(st.lists(predicate, max_size=3)),
                        "incidents": draw(st.lists(incident, max_size=2)), "extra": draw(extra),
                        "artifact": draw(st.sampled_from([None, "stored", "missing"])),
                    } for _ in range(draw(st.integers(1, 3)))],
                    "trace": draw(st.booleans()),
                })
    return out


def build(path: Path, spec: list[dict[str, Any]], missing: int) -> Path:
    """A real run directory written as the runner writes one: traces and artifacts, then results."""
    tids = [trial_id(tr["task"], "base", tr["agent"], tr["rep"]) for tr in spec]
    planned = tids + [trial_id(f"gone{i}", "base", "a", 1) for i in range(missing)]
    rd = RunDir.create(path, manifest({"code": 2, "ops": 1}, sorted({tr["agent"] for tr in spec}), planned))
    for tid, tr in zip(tids, spec):
        if tr["trace"]:
            w = TraceWriter(rd.trace_path(tid), tid)
            for n in range(1, len(tr["attempts"]) + 1):
                w.attempt = n
                w.emit(Source.harness, EventKind.attempt_started, {})
                w.emit(Source.agent, EventKind.tool_call, {"call_id": "1", "name": "sh", "arguments": {"c": "x"}})
                w.emit(Source.agent, EventKind.tool_result, {"call_id": "1", "name": "sh", "ok": n % 2 == 0})
                w.emit(Source.harness, EventKind.attempt_ended, {})
        for n, a in enumerate(tr["attempts"], 1):
            r = attempt(tr["task"], tr["category"], tr["agent"], tr["rep"], a["state"], attempt=n, cost=a["cost"],
                        tokens=a["tokens"], tool_calls=a["tool_calls"], wall=a["wall"], partial=a["partial"],
                        diagnostic=a["diagnostic"], predicates=a["predicates"], incidents=a["incidents"],
                        extra=a["extra"], retryable=n < len(tr["attempts"]))
            if a["artifact"] == "stored":
                r = r.model_copy(update={"artifacts": {"stdout": rd.put_artifact(f"out {tid} {n}".encode())}})
            elif a["artifact"] == "missing":
                r = r.model_copy(update={"artifacts": {"stdout": "0" * 64}})
            rd.write_result(r)
    return rd.path


def same(path: Path, **kw: Any) -> dict[str, Any] | None:
    """Both readers' outcome (the document, or the refusal word for word); the document if any."""
    def outcome(score: Any) -> tuple[str, Any]:
        try:
            d = score(path, **kw).dump()
        except IntegrityError as e:
            return "refused", str(e)
        d.pop("scored_at")
        d.pop("rules_digest")  # digests the scorer's own source, which this change edits
        return "scored", json.dumps(d)  # byte for byte: key order included

    new = outcome(score_run)
    assert new == outcome(reference_score_run)
    return json.loads(new[1]) if new[0] == "scored" else None


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=trials(), missing=st.integers(0, 2))
def test_same_document_as_the_pydantic_reader(tmp_path_factory: pytest.TempPathFactory, spec: list[dict[str, Any]],
                                              missing: int) -> None:
    path = build(tmp_path_factory.mktemp("fp") / "run", spec, missing)
    doc = same(path)
    lost = any(a["artifact"] == "missing" for t in spec for a in t["attempts"])
    assert (doc is None) == lost  # a result naming a missing artifact fails the check
    unchecked = same(path, verify=False)
    assert unchecked is not None and len(unchecked["trials"]) == len(spec) + missing
    assert len(unchecked["inputs"]["results"]) == sum(len(t["attempts"]) for t in spec)
    assert len(unchecked["inputs"]["traces"]) == sum(1 for t in spec if t["trace"])
    same(path, keep_trials=False, verify=False)
