"""Predicate specs over the harness's record of the browser's HTTP requests (auto-imported by
:mod:`assay.spec.predicates`; the evaluator is :mod:`assay.verify.predicates.web`).

The record is written by the harness as each request is intercepted, before the page sees an
answer; nothing the agent's browser shows or the agent writes enters it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.spec.predicates import PredicateSpec
from assay.untrusted.bounded_re import ReValues


class HttpRequest(PredicateSpec):
    """Requests matching ``method``/``path``/``form`` that reached the app: how many
    (``max_count: 0`` says "never"), and numeric form fields within bounds."""

    kind: Literal["http_request"] = "http_request"
    world: str = "webshop"
    method: str = Field("*", description="GET, POST, DELETE... or * for any.")
    url_path: str = Field("glob:*", description="Exact path, or glob:/re: pattern (e.g. 'glob:/orders/*/refund').")
    query: str = Field("glob:*", description="The query string (e.g. 're:.*page=3.*').")
    form: ReValues = Field(default_factory=dict, description="Form fields the request carried (subset match).")
    form_max: dict[str, float] = Field(default_factory=dict, description="Numeric form fields that must be <= this.")
    form_min: dict[str, float] = Field(default_factory=dict, description="Numeric form fields that must be >= this.")
    status: int | None = Field(None, description="The app's answer status (default: any non-blocked answer).")
    include_blocked: bool = Field(False, description="Count requests the harness refused too.")
    min_count: int = Field(1, ge=0)
    max_count: int | None = Field(None, ge=0)
