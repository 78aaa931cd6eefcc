"""Spec: suite, task, predicate and run-manifest models, and loading them with clear errors.

The names below are read from their modules on first use (PEP 562): importing one small module
of the package (``assay.spec.network`` for ``assay run --help``) must not build every model."""

from __future__ import annotations

from typing import TYPE_CHECKING

from assay._optional import lazy_names

#: public name -> the module of this package that defines it
_FROM: dict[str, str] = {
    "Budget": "budget", "Limits": "budget", "NetworkProfile": "network", "Risk": "budget",
    "FaultKind": "faults", "FaultSpec": "faults",
    "LoadedSuite": "load", "LoadedTask": "load", "load_suite": "load", "load_task": "load",
    "PredicateSpec": "predicates", "registered_kinds": "predicates",
    "Category": "suite", "SuiteSpec": "suite", "TaskSpec": "task", "Variant": "task",
}
__all__ = [
    "Budget", "Category", "FaultKind", "FaultSpec", "Limits", "LoadedSuite", "LoadedTask", "NetworkProfile",
    "PredicateSpec", "Risk", "SuiteSpec", "TaskSpec", "Variant", "load_suite", "load_task",
    "registered_kinds",
]

if TYPE_CHECKING:
    from assay.spec.budget import Budget, Limits, Risk
    from assay.spec.faults import FaultKind, FaultSpec
    from assay.spec.load import LoadedSuite, LoadedTask, load_suite, load_task
    from assay.spec.network import NetworkProfile
    from assay.spec.predicates import PredicateSpec, registered_kinds
    from assay.spec.suite import Category, SuiteSpec
    from assay.spec.task import TaskSpec, Variant


__getattr__ = lazy_names("assay.spec", {name: f"assay.spec.{module}" for name, module in _FROM.items()})


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
