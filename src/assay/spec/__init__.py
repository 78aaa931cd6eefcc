"""Spec: suite, task, predicate and run-manifest models, and loading them with clear errors."""

from assay.spec.budget import Budget, Limits, NetworkProfile, Risk
from assay.spec.faults import FaultKind, FaultSpec
from assay.spec.load import LoadedSuite, LoadedTask, load_suite, load_task
from assay.spec.manifest import RunManifest
from assay.spec.predicates import PredicateSpec, registered_kinds
from assay.spec.results import AttemptResult, EndState, PredicateResult, Timings, UsageTotals
from assay.spec.suite import Category, SuiteSpec
from assay.spec.task import TaskSpec, Variant

__all__ = [
    "AttemptResult", "Budget", "Category", "EndState", "FaultKind", "FaultSpec", "Limits", "LoadedSuite",
    "LoadedTask", "NetworkProfile", "PredicateResult", "PredicateSpec", "Risk", "RunManifest", "SuiteSpec",
    "TaskSpec", "Timings", "UsageTotals", "Variant", "load_suite", "load_task", "registered_kinds",
]
