"""Spec: suite, task, predicate and run-manifest models, and loading them with clear errors."""

from assay.spec.budget import Budget, Limits, NetworkProfile, Risk
from assay.spec.faults import FaultKind, FaultSpec
from assay.spec.load import LoadedSuite, LoadedTask, load_suite, load_task
from assay.spec.predicates import PredicateSpec, registered_kinds
from assay.spec.suite import Category, SuiteSpec
from assay.spec.task import TaskSpec, Variant

__all__ = [
    "Budget", "Category", "FaultKind", "FaultSpec", "Limits", "LoadedSuite", "LoadedTask", "NetworkProfile",
    "PredicateSpec", "Risk", "SuiteSpec", "TaskSpec", "Variant", "load_suite", "load_task",
    "registered_kinds",
]
