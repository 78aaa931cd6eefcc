"""Predicate evaluators by kind: the code half of a predicate (the spec half is in
:mod:`assay.spec.predicates`), one :class:`~assay.registry.Registry`.

Built-in evaluators are the functions marked with :func:`evaluator` in :data:`BUILTIN_MODULES`
(found by scanning those modules, so the order of imports never matters). A third party
declares a kind whole with :func:`register_predicate` (spec and evaluator together) or with a
:class:`~assay.spec.predicates.PredicateKind` under the ``assay.predicates`` entry point.

Each evaluator carries its *trust level* (:func:`trust_of`): ``state`` evaluators run first,
over the read-only snapshot; the others execute code, each in a sandbox of its own over its own
fresh copy (see :mod:`assay.verify.verifier`). An evaluator that declares no trust level is
taken to execute code (``in_process``): unknown is the weakest.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, TypeVar

from assay.records.results import Trust
from assay.registry import Registry
from assay.spec.predicates import PredicateKind, PredicateSpec, register_predicate_spec
from assay.verify.context import Outcome, VerifyContext

Evaluator = Callable[[PredicateSpec, VerifyContext], Awaitable[Outcome]]
F = TypeVar("F", bound=Evaluator)

#: modules holding the built-in evaluators
BUILTIN_MODULES = ("assay.verify.predicates.files", "assay.verify.predicates.commands", "assay.verify.predicates.reward",
                   "assay.verify.predicates.plugin", "assay.verify.predicates.worlds",
                   "assay.verify.predicates.trajectory", "assay.verify.predicates.security",
                   "assay.verify.predicates.judge", "assay.verify.predicates.io_cases",
                   "assay.verify.predicates.fail_pass", "assay.verify.predicates.web")
_MARK = "__assay_predicate_kind__"
_TRUST = "__assay_trust__"


def _builtin_evaluators() -> dict[str, Evaluator]:
    table: dict[str, Evaluator] = {}
    for name in BUILTIN_MODULES:
        for obj in vars(importlib.import_module(name)).values():
            kind = getattr(obj, _MARK, None)
            if isinstance(kind, str) and callable(obj):
                table[kind] = obj
    return table


def _evaluate_of(declared: Any) -> Evaluator:
    evaluate = getattr(declared, "evaluate", None)
    if not callable(evaluate):
        raise TypeError(f"{declared!r} declares no evaluator (expected a PredicateKind)")
    return evaluate


#: evaluators by predicate kind (entry-point group ``assay.predicates``, shared with the spec half)
EVALUATORS: Registry[Evaluator] = Registry("predicate evaluator", "assay.predicates", _builtin_evaluators,
                                           from_entry_point=_evaluate_of)


def evaluator(kind: str, trust: Trust = Trust.state) -> Callable[[F], F]:
    """Mark (built-in modules) or register (anywhere else) the evaluator of one predicate kind.
    ``trust`` ``outside_oracle`` or ``in_process`` means it runs agent-written code: it is
    scheduled after every state predicate. ``model_judged`` is a model's opinion (the judge)."""

    def deco(fn: F) -> F:
        setattr(fn, _MARK, kind)
        setattr(fn, _TRUST, Trust(trust))
        if fn.__module__ not in BUILTIN_MODULES:
            EVALUATORS.register(kind, fn)
        return fn

    return deco


def register_predicate(spec: type[PredicateSpec], evaluate: Evaluator, *, replace: bool = False) -> PredicateKind:
    """Declare a third-party predicate kind whole: loadable in task files and evaluated by the verifier."""
    declared = PredicateKind(spec, evaluate)
    register_predicate_spec(spec, replace=replace)
    EVALUATORS.register(declared.kind, evaluate, replace=replace)
    return declared


def get_evaluator(kind: str) -> Evaluator:
    """The evaluator of predicate ``kind``; an unknown one is :class:`~assay.registry.UnknownPlugin` (a KeyError)."""
    return EVALUATORS.get(kind)


def trust_of(kind: str) -> Trust:
    """The trust level of a predicate kind's verdicts (one truth for validate, results and reports)."""
    return Trust(getattr(get_evaluator(kind), _TRUST, Trust.in_process))


@dataclass(frozen=True)
class Registered:
    """A kind's evaluator with its trust level."""

    fn: Evaluator
    trust: Trust

    @property
    def executes_code(self) -> bool:
        """Agent-written code runs to reach the verdict: scheduled after every state predicate."""
        return self.trust in (Trust.outside_oracle, Trust.in_process)


def registered(kind: str) -> Registered:
    return Registered(get_evaluator(kind), trust_of(kind))
