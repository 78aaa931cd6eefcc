"""The network-trace evaluator: decides on the harness-side request log of the browser
(``VerifierInputs.http_requests[world]``), never on the page or on agent-written files."""

from __future__ import annotations

from typing import Any

from assay.records.results import Trust
from assay.spec.predicates import PredicateSpec
from assay.spec.web_predicates import HttpRequest
from assay.verify.context import Outcome, VerifyContext
from assay.verify.registry import evaluator
from assay.worlds.matching import subset_matches, value_matches


def _number(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _within(spec: HttpRequest, form: dict[str, Any]) -> bool:
    for k, hi in spec.form_max.items():
        n = _number(form.get(k))
        if n is None or n > hi + 1e-9:
            return False
    for k, lo in spec.form_min.items():
        n = _number(form.get(k))
        if n is None or n < lo - 1e-9:
            return False
    return True


@evaluator("http_request", trust=Trust.recorded)
async def http_request(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, HttpRequest)
    logs = ctx.extra.http_requests
    if spec.world not in logs:
        return Outcome(False, {"world": spec.world, "error": "no request log for this world (fail closed)"})
    hits = []
    for r in logs[spec.world]:
        if r.get("path") is None or (r.get("blocked") and not spec.include_blocked):
            continue
        if spec.method != "*" and r.get("method") != spec.method.upper():
            continue
        if not value_matches(spec.url_path, r["path"]) or not value_matches(spec.query, r.get("query") or "") or not subset_matches(spec.form, r.get("form") or {}):
            continue
        if spec.status is not None and r.get("status") != spec.status:
            continue
        if _within(spec, r.get("form") or {}):
            hits.append(r)
    ok = len(hits) >= spec.min_count and (spec.max_count is None or len(hits) <= spec.max_count)
    return Outcome(ok, {"world": spec.world, "matched": len(hits), "requests": hits[:20],
                        "logged": len(logs[spec.world])})
