"""The msgspec reader of result files agrees with the pydantic model on every input: the same
fields and defaults, the same values for every file it accepts, and anything it refuses is
parsed or refused by pydantic exactly as `read_result` does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from assay.errors import IntegrityError
from assay.records.incident import Incident
from assay.records.results import AttemptResult, PredicateResult, Timings, UsageTotals
from assay.store.fastread import (FastIncident, FastPredicate, FastResult, FastTimings, FastUsage, decode_result,
                                  parse_with_pydantic)
from assay.store.rundir import read_result

PAIRS: list[tuple[type[BaseModel], type[msgspec.Struct]]] = [
    (AttemptResult, FastResult), (PredicateResult, FastPredicate), (UsageTotals, FastUsage), (Timings, FastTimings),
    (Incident, FastIncident)]


@pytest.mark.parametrize(("model", "struct"), PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_mirror_has_the_models_fields_and_defaults(model: type[BaseModel], struct: type[msgspec.Struct]) -> None:
    fields = {f.name: f for f in msgspec.structs.fields(struct)}
    assert set(fields) == set(model.model_fields)
    for name, info in model.model_fields.items():
        f = fields[name]
        assert info.is_required() == (f.required), name
        if not info.is_required():
            default = info.get_default(call_default_factory=True)
            mine = f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            if isinstance(default, BaseModel):
                assert msgspec.structs.asdict(mine) == default.model_dump(), name
            else:
                assert mine == default, name
    forbid = model.model_config.get("extra") == "forbid"
    assert struct.__struct_config__.forbid_unknown_fields == forbid


def plain(x: Any) -> Any:
    """A record as nested plain values, with types kept (1 and 1.0 differ here)."""
    if isinstance(x, msgspec.Struct):
        return {f: plain(getattr(x, f)) for f in x.__struct_fields__}
    if isinstance(x, BaseModel):
        return {f: plain(getattr(x, f)) for f in type(x).model_fields}
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain(v) for v in x]
    return (type(x).__name__, x)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
                      st.text(max_size=6))
json_value = st.recursive(json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                          max_leaves=6)
#: values that land in any field: every JSON type, so wrong types are tried too
anything = st.one_of(json_value, st.sampled_from(["pass", "fail", "skipped", "high", "turns", "state", "3", "1.5", "true",
                                                  -1, 101, 100.5, -0.0, 0, 1, 2**63, 2**64, 1e308, [], {}]))

VALID: dict[str, Any] = json.loads(AttemptResult(
    run_id="r", trial_id="t.base.a.r1", task_id="t", category="code", variant="base", agent="a", repetition=1,
    attempt=1, end_state="pass", diagnostic_score=50.0, timings=Timings(started_at=1.0, ended_at=2.5),
    usage=UsageTotals(cost_usd=0.25, input_tokens=10, output_tokens=2, tool_calls=1),
    predicates=[PredicateResult(id="p", kind="tool_call", required=True, weight=1.0, passed=True, evidence={"n": 1})],
    incidents=[Incident(type="secret_leak", severity="low", evidence={"k": [1, 2.5]})],
    artifacts={"stdout": "ab" * 32}, extra={"behaviour": {"expected": "act", "wrong_side_effects": 0}},
).model_dump_json())

#: where a mutation lands, and the model whose keys are tried there
PATHS = {(): AttemptResult, ("timings",): Timings, ("usage",): UsageTotals, ("predicates", 0): PredicateResult,
         ("incidents", 0): Incident, ("extra",): AttemptResult}


def outcome(reader: Any, data: bytes, path: Path) -> tuple[str, Any]:
    try:
        return "ok", plain(reader(data, path))
    except IntegrityError as e:
        return "refused", str(e)


mutation = st.sampled_from(sorted(PATHS)).flatmap(
    lambda where: st.tuples(st.just(where), st.sampled_from(sorted(PATHS[where].model_fields) + ["x"])))


@settings(max_examples=500, deadline=None)
@given(at=mutation, value=anything, drop=st.booleans())
def test_both_readers_agree_on_any_mutation(at: tuple[tuple[Any, ...], str], value: Any, drop: bool) -> None:
    where, key = at
    doc = json.loads(json.dumps(VALID))
    node = doc
    for step in where:
        node = node[step]
    if drop:
        node.pop(key, None)
    else:
        node[key] = value
    data = json.dumps(doc).encode()
    path = Path("/nonexistent/result.json")
    assert outcome(decode_result, data, path) == outcome(parse_with_pydantic, data, path)


@pytest.mark.parametrize("text", ['{"run_id": ', "", "[]", "null", '{"run_id": "r"}', "{\"a\": NaN}"])
def test_damaged_file_is_refused_with_the_usual_message(tmp_path: Path, text: str) -> None:
    p = tmp_path / "result.json"
    p.write_text(text)
    with pytest.raises(IntegrityError) as fast:
        decode_result(p.read_bytes(), p)
    with pytest.raises(IntegrityError) as usual:
        read_result(p)
    assert str(fast.value) == str(usual.value) and str(p) in str(fast.value)


def test_lax_forms_msgspec_refuses_are_read_by_pydantic() -> None:
    doc = dict(VALID, repetition="1", diagnostic_score="50")
    r = decode_result(json.dumps(doc).encode(), Path("r.json"))
    assert isinstance(r, AttemptResult) and r.repetition == 1 and r.diagnostic_score == 50.0
    fast = decode_result(json.dumps(VALID).encode(), Path("r.json"))
    assert isinstance(fast, FastResult) and plain(fast) == plain(r)


@pytest.mark.parametrize(("where", "key", "value"), [
    ((), "diagnostic_score", -1), ((), "diagnostic_score", 100.5), ((), "diagnostic_score", 100), ((), "end_state", "won"),
    ((), "budget_exceeded", "wallet"), ((), "budget_exceeded", "turns"), ((), "repetition", 1.5), ((), "repetition", 2.0),
    ((), "attempt", 2**64), ((), "attempt", True), ((), "partial", 1), ((), "artifacts", {"a": 1}),
    (("incidents", 0), "severity", "severe"), (("incidents", 0), "extra_key", 1), (("incidents", 0), "type", None),
    (("predicates", 0), "trust", "blind"), (("predicates", 0), "trust", "state"), (("predicates", 0), "weight", "1"),
    (("timings",), "ended_at", None), (("usage",), "cost_usd", 2**70), (("usage",), "tool_calls", -3)])
def test_constraints_agree(where: tuple[Any, ...], key: str, value: Any) -> None:
    doc = json.loads(json.dumps(VALID))
    node = doc
    for step in where:
        node = node[step]
    node[key] = value
    data = json.dumps(doc).encode()
    path = Path("/nonexistent/result.json")
    assert outcome(decode_result, data, path) == outcome(parse_with_pydantic, data, path)
