"""assay: an evaluation platform for AI agents whose numbers hold up when someone checks them.

The public face: import from ``assay`` only; every other module path is internal.
Names are resolved lazily so ``import assay`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> module that defines it
_PUBLIC: dict[str, str] = {
    # spec
    "SuiteSpec": "assay.spec.suite", "TaskSpec": "assay.spec.task", "Variant": "assay.spec.task",
    "Budget": "assay.spec.budget", "Limits": "assay.spec.budget", "NetworkProfile": "assay.spec.network",
    "Risk": "assay.spec.budget", "FaultSpec": "assay.spec.faults", "PredicateSpec": "assay.spec.predicates",
    "RunManifest": "assay.records.manifest", "AttemptResult": "assay.records.results", "EndState": "assay.records.results",
    "PredicateResult": "assay.records.results", "load_suite": "assay.spec.load", "load_task": "assay.spec.load",
    # run
    "RunOptions": "assay.run.runner", "RunOutcome": "assay.run.runner", "start_run": "assay.run.runner",
    "resume_run": "assay.run.runner", "validate_suite": "assay.run.validate", "hookimpl": "assay.run.hooks",
    "HarnessService": "assay.harness.services", "ServiceSession": "assay.harness.services",
    # extension points
    "AgentAdapter": "assay.agents.base", "AgentContext": "assay.agents.base", "AgentOutcome": "assay.agents.base",
    "AgentInfo": "assay.agents.base", "register": "assay.plugins", "register_agent": "assay.agents.registry",
    "SandboxBackend": "assay.sandbox.base", "Sandbox": "assay.sandbox.base", "SandboxSpec": "assay.sandbox.base",
    "ExecResult": "assay.sandbox.base", "BackendStatus": "assay.sandbox.base",
    "register_sandbox_backend": "assay.sandbox.registry",
    "ModelBackend": "assay.gateway.backends.base", "BackendSession": "assay.gateway.backends.base",
    "register_model_backend": "assay.gateway.backends.base", "ModelRequest": "assay.gateway.neutral",
    "ModelReply": "assay.gateway.neutral", "GatewayRecord": "assay.records.manifest",
    "World": "assay.worlds.base", "ToolDef": "assay.worlds.base", "ToolError": "assay.worlds.base",
    "world": "assay.worlds.registry", "UnknownPlugin": "assay.registry", "RegistryError": "assay.registry",
    "evaluator": "assay.verify.registry", "register_predicate": "assay.verify.registry",
    "PredicateKind": "assay.spec.predicates", "register_product": "assay.agents.registry", "Outcome": "assay.verify.context", "VerifyContext": "assay.verify.context",
    # score and report (read the run directory only)
    "score_run": "assay.score.engine", "write_score": "assay.score.versions", "compare_scores": "assay.score.compare",
    "build_report": "assay.report.build", "write_report": "assay.report.build",
    "load_results": "assay.report.export", "ScoreDocument": "assay.records.scores",
    "Comparison": "assay.records.comparison",
    # evidence
    "RunDir": "assay.store.rundir", "verify_run": "assay.store.integrity", "TraceEvent": "assay.trace.events",
    "EventKind": "assay.trace.events", "read_events": "assay.trace.writer",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'assay' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
