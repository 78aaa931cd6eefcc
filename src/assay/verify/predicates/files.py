"""Evaluators over the final workspace snapshot: files, contents, digests, JSON."""

from __future__ import annotations

import fnmatch
import json
from typing import Any, Awaitable, Callable


from assay.spec.digest import sha256_bytes
from assay.spec.predicates import (
    FileAbsent, FileContains, FileDigest, FileEquals, FileExists, FileMatches, JsonSchemaValid, JsonValue, PredicateSpec,
    Unchanged,
)
from assay.untrusted import bounded_re
from assay.untrusted.json_text import loads as loads_untrusted
from assay.verify.context import Outcome, PathEscape, VerifyContext, excerpt
from assay.verify.registry import evaluator


def _read(ctx: VerifyContext, rel: str) -> tuple[str | None, dict[str, Any]]:
    """Text of a snapshot file, or None with evidence saying why it could not be read."""
    try:
        p = ctx.resolve(rel)
    except PathEscape as e:
        return None, {"path": rel, "escape": str(e)}
    if not p.is_file():
        return None, {"path": rel, "exists": False}
    data = ctx.read_bytes(rel)
    return data.decode("utf-8", errors="replace"), {"path": rel, "sha256": sha256_bytes(data), "size": len(data)}


FileCheck = Callable[[Any, VerifyContext, str, dict[str, Any]], Outcome]


def over_file(check: FileCheck) -> Callable[[PredicateSpec, VerifyContext], Awaitable[Outcome]]:
    """An evaluator reading ``spec.path`` from the snapshot: a missing or escaping file fails
    with the evidence of why, before ``check`` sees any text."""

    async def evaluate(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
        text, ev = _read(ctx, getattr(spec, "path"))
        if text is None:
            return Outcome(False, ev)
        return check(spec, ctx, text, ev)

    return evaluate


@evaluator("file_exists")
async def file_exists(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, FileExists)
    try:
        p = ctx.resolve(spec.path)
    except PathEscape as e:
        return Outcome(False, {"path": spec.path, "escape": str(e)})
    return Outcome(p.exists(), {"path": spec.path, "exists": p.exists()})


@evaluator("file_absent")
async def file_absent(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, FileAbsent)
    p = ctx.work / spec.path
    present = p.exists() or p.is_symlink()
    return Outcome(not present, {"path": spec.path, "exists": present})


@evaluator("file_equals")
@over_file
def file_equals(spec: FileEquals, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    if spec.text is not None:
        expected = spec.text
    else:
        assert spec.expected_file is not None
        expected = ctx.resolve(spec.expected_file, base=ctx.hidden).read_text()
    a, b = (text.strip(), expected.strip()) if spec.strip else (text, expected)
    ev.update({"content": excerpt(text), "expected": excerpt(expected)})
    return Outcome(a == b, ev)


@evaluator("file_contains")
@over_file
def file_contains(spec: FileContains, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    needles = [spec.text] if isinstance(spec.text, str) else spec.text
    hay = text.lower() if spec.ignore_case else text
    missing = [n for n in needles if (n.lower() if spec.ignore_case else n) not in hay]
    ev.update({"content": excerpt(text), "missing": missing})
    return Outcome(not missing, ev)


@evaluator("file_matches")
@over_file
def file_matches(spec: FileMatches, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    try:
        m = bounded_re.search(spec.regex, text, multiline=True)
    except bounded_re.MatchTimeout:
        ev.update({"content": excerpt(text), **bounded_re.timed_out()})
        return Outcome(False, ev)
    ev.update({"content": excerpt(text), "match": excerpt(m.group(0)) if m else None})
    return Outcome(m is not None, ev)


@evaluator("file_digest")
@over_file
def file_digest(spec: FileDigest, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    ev["expected_sha256"] = spec.sha256
    return Outcome(ev["sha256"] == spec.sha256, ev)


def _selected(path: str, globs: list[str], exclude: list[str]) -> bool:
    def hit(pats: list[str]) -> bool:
        return any(p == "**" or fnmatch.fnmatchcase(path, p) or fnmatch.fnmatchcase(path, p.rstrip("/") + "/*")
                   or path.startswith(p.rstrip("/") + "/") for p in pats)

    return hit(globs) and not hit(exclude)


@evaluator("unchanged")
async def unchanged(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, Unchanged)
    before = {p: d for p, d in ctx.initial_digests.items() if _selected(p, spec.paths, spec.exclude)}
    after = {p: d for p, d in ctx.final_digests.items() if _selected(p, spec.paths, spec.exclude)}
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    modified = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    ev = {"checked": len(before), "added": added[:50], "removed": removed[:50], "modified": modified[:50]}
    return Outcome(not (added or removed or modified), ev)


def _load_json(text: str, lines: bool) -> Any:
    if lines:
        return [loads_untrusted(line) for line in text.splitlines() if line.strip()]
    return loads_untrusted(text)


@evaluator("json_schema")
@over_file
def json_schema(spec: JsonSchemaValid, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    try:
        docs = _load_json(text, spec.lines)
    except ValueError as e:
        ev.update({"content": excerpt(text), "json_error": str(e)})
        return Outcome(False, ev)
    schema = spec.json_schema
    if schema is None:
        assert spec.schema_file is not None
        schema = json.loads(ctx.resolve(spec.schema_file, base=ctx.hidden).read_text())
    import jsonschema  # where a task checks a schema, not at every run's start-up

    validator = jsonschema.Draft202012Validator(schema)
    errors = []
    for i, doc in enumerate(docs if spec.lines else [docs]):
        try:
            for err in validator.iter_errors(doc):
                errors.append({"item": i, "at": "/" + "/".join(str(x) for x in err.absolute_path),
                               "message": err.message})
        except RecursionError:  # unknown is failure, and the agent's document, not the harness, is why
            errors.append({"item": i, "at": "/", "message": "the document is nested too deep to check"})
    ev.update({"errors": errors[:20], "error_count": len(errors)})
    return Outcome(not errors, ev)


def _pointer(doc: Any, pointer: str) -> Any:
    if pointer in ("", "/"):
        return doc
    for raw in pointer.lstrip("/").split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, list):
            doc = doc[int(key)]
        else:
            doc = doc[key]
    return doc


def _equal(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= tol
    return a == b


@evaluator("json_value")
@over_file
def json_value(spec: JsonValue, ctx: VerifyContext, text: str, ev: dict[str, Any]) -> Outcome:
    try:
        doc = loads_untrusted(text)
    except ValueError as e:
        ev.update({"content": excerpt(text), "json_error": str(e)})
        return Outcome(False, ev)
    found: dict[str, Any] = {}
    wrong: list[str] = []
    for ptr, want in spec.expect.items():
        try:
            got = _pointer(doc, ptr)
        except (KeyError, IndexError, ValueError, TypeError):
            found[ptr] = "<missing>"
            wrong.append(ptr)
            continue
        found[ptr] = got
        if not _equal(got, want, spec.tolerance):
            wrong.append(ptr)
    ev.update({"found": found, "expected": spec.expect, "wrong": wrong})
    return Outcome(not wrong, ev)
