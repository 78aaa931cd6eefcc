"""Predicate evaluators by kind: the code half of a predicate (the spec half is in
:mod:`assay.spec.predicates`). A new predicate is a spec model plus one evaluator here."""

from __future__ import annotations

from typing import Awaitable, Callable, TypeVar

from assay.spec.predicates import PredicateSpec
from assay.verify.context import Outcome, VerifyContext

Evaluator = Callable[[PredicateSpec, VerifyContext], Awaitable[Outcome]]
_EVALUATORS: dict[str, Evaluator] = {}
F = TypeVar("F", bound=Evaluator)


def evaluator(kind: str) -> Callable[[F], F]:
    """Register the evaluator of one predicate kind."""

    def deco(fn: F) -> F:
        _EVALUATORS[kind] = fn
        return fn

    return deco


def get_evaluator(kind: str) -> Evaluator:
    if not _EVALUATORS:
        load_builtin_evaluators()
    if kind not in _EVALUATORS:
        raise KeyError(f"no evaluator registered for predicate kind {kind!r}")
    return _EVALUATORS[kind]


def load_builtin_evaluators() -> None:
    from importlib.metadata import entry_points

    from assay._optional import optional_import

    for mod in ("assay.verify.predicates.files", "assay.verify.predicates.commands", "assay.verify.predicates.plugin",
                "assay.verify.predicates.worlds", "assay.verify.predicates.trajectory", "assay.verify.predicates.security"):
        optional_import(mod)
    for ep in entry_points(group="assay.predicates"):
        ep.load()
