"""JSON the agent wrote, read by the harness's own predicates: nesting past the parser's depth
raises ``RecursionError`` (not a ``ValueError``), and a crash in a predicate is the harness's
error (``verifier_crash``, an infra error). An agent that cannot solve a task must not be able to
turn its failure into the harness's fault: such a document fails its predicate, with evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.verify.attack_kit import run_hostile
from tests.verify.test_predicates import by_id, verify

DEEP = "[" * 100_000 + "]" * 100_000  # past CPython's parser depth
RECURSIVE_SCHEMA = {"type": "array", "items": {"$ref": "#"}}


def test_json_nested_past_the_parser_depth_fails_the_predicate_not_the_harness(tmp_path: Path) -> None:
    r = verify(tmp_path, [
        {"id": "value", "kind": "json_value", "path": "out.json", "expect": {"/0": 1}},
        {"id": "schema", "kind": "json_schema", "path": "out.json", "schema": {"type": "array"}},
        {"id": "lines", "kind": "json_schema", "path": "out.jsonl", "lines": True, "schema": {"type": "array"}},
    ], {"out.json": DEEP, "out.jsonl": "[]\n" + DEEP + "\n"})
    p = by_id(r)
    for pid in ("value", "schema", "lines"):
        assert not p[pid].passed and p[pid].error is None, pid
        assert "json_error" in p[pid].evidence, (pid, p[pid].evidence)


def test_a_document_too_deep_for_the_schema_check_fails_with_evidence(tmp_path: Path) -> None:
    """Deep enough to parse, too deep for a recursive schema's validator."""
    doc = "[" * 900 + "]" * 900
    json.loads(doc)  # the parser takes it
    r = verify(tmp_path, [{"id": "schema", "kind": "json_schema", "path": "out.json", "schema": RECURSIVE_SCHEMA}],
               {"out.json": doc})
    p = by_id(r)["schema"]
    assert not p.passed and p.error is None
    assert "too deep" in json.dumps(p.evidence)


def test_an_honest_nested_document_still_passes(tmp_path: Path) -> None:
    doc = "[[[]]]"
    r = verify(tmp_path, [{"id": "schema", "kind": "json_schema", "path": "out.json", "schema": RECURSIVE_SCHEMA},
                          {"id": "value", "kind": "json_value", "path": "out.json", "expect": {"/0/0": []}}],
               {"out.json": doc})
    p = by_id(r)
    assert p["schema"].passed and p["value"].passed


HIJACK = """
import os
for fd in range(3, 64):  # the driver's duplicate of stdout is one of these
    try:
        os.write(fd, PAYLOAD)
    except OSError:
        pass
os._exit(0)
"""


@pytest.mark.parametrize("payload", [b"@@ASSAY-IO@@{torn\\n", b"@@ASSAY-IO@@" + b"[" * 100_000 + b"\\n",
                                     b"@@ASSAY-IO@@[1, 2]\\n"])
def test_code_under_test_writing_the_drivers_outcome_line_fails_its_case_not_the_harness(
        tmp_path: Path, payload: bytes) -> None:
    """The module under test writes a broken outcome line straight to the driver's duplicate of
    stdout and exits before the driver can: the case fails (the attempt's fault), it is never
    the harness's crash (an infra error that hides the failure)."""
    source = HIJACK.replace("PAYLOAD", repr(payload))
    result = run_hostile(tmp_path, {"text.py": source}, [
        {"id": "cases", "kind": "io_cases", "call": "text:slug",
         "cases": [{"id": "basic", "args": ["Hello World"], "returns": "hello-world"}]}])
    assert result["end_state"] == "fail" and result["reason"] == "predicates", (result["end_state"], result["reason"],
                                                                               result.get("errors"))
    [p] = result["verifier"]["predicates"] if "verifier" in result else [
        p for p in result["predicates"] if p["id"] == "cases"]
    assert not p["passed"] and p["error"] is None
