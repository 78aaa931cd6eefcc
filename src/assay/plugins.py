"""Every extension point in one list, and one verb to add to any of them.

:data:`PLUGIN_KINDS` names each kind's :class:`~assay.registry.Registry` by module and attribute
(imported only when asked, so nothing here costs ``assay --help``); ``assay plugins`` lists them.
:func:`register` is the one call shape for a plug-in of any kind, ``register(KIND, NAME, OBJ)``,
beside the kind-specific helpers it goes through (``register_agent`` and the others stay, for
the code that already uses them).
"""

from __future__ import annotations

import importlib
from typing import Any

from assay.errors import UsageError
from assay.registry import Registry, UnknownPlugin

#: short kind name (``assay plugins KIND``, ``register(KIND, ...)``) -> "module:ATTRIBUTE" of its registry
PLUGIN_KINDS: dict[str, str] = {
    "agent": "assay.agents.registry:AGENTS",
    "product": "assay.agents.products:PRODUCTS",
    "sandbox": "assay.sandbox.registry:BACKENDS",
    "model": "assay.gateway.backends.base:MODEL_BACKENDS",
    "predicate": "assay.spec.predicates:PREDICATE_SPECS",
    "evaluator": "assay.verify.registry:EVALUATORS",
    "world": "assay.worlds.registry:WORLDS",
    "export": "assay.report.export:EXPORT_TARGETS",
}

#: what OBJ is for each kind, for the error a wrong one gets
_WHAT = {
    "agent": "an agent factory or adapter class", "product": "an AgentAdapter class",
    "sandbox": "a SandboxBackend class whose `name` is NAME", "model": "a model backend factory",
    "predicate": "a (PredicateSpec class, evaluator) pair whose spec's kind is NAME",
    "evaluator": "an evaluator for predicate kind NAME", "world": "a World class", "export": "an export target",
}


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def registry_of(kind: str) -> Registry[Any]:
    """The registry of one short kind name; an unknown kind is :class:`UnknownPlugin` like any name."""
    ref = PLUGIN_KINDS.get(kind)
    if ref is None:
        raise UnknownPlugin("plug-in kind", kind, list(PLUGIN_KINDS), "", fix="use one of these (`assay plugins` lists them)")
    return _load(ref)


def register(kind: str, name: str, obj: Any, *, replace: bool = False) -> Any:
    """Add ``obj`` as plug-in ``name`` of ``kind``; returns ``obj``. A product is also an agent, a
    predicate both its task-file model and its evaluator, as their own helpers do."""
    registry_of(kind)  # an unknown kind: UnknownPlugin
    if kind == "agent":
        return _load("assay.agents.registry:register_agent")(name, obj, replace=replace)
    if kind == "product":
        return _load("assay.agents.registry:register_product")(name, obj, replace=replace)
    if kind == "model":
        return _load("assay.gateway.backends.base:register_model_backend")(name, obj, replace=replace)
    if kind == "sandbox":
        if getattr(obj, "name", None) != name:
            raise _wrong(kind, name, f"its `name` is {getattr(obj, 'name', None)!r}")
        return _load("assay.sandbox.registry:register_sandbox_backend")(obj, replace=replace)
    if kind == "predicate":
        if not (isinstance(obj, tuple) and len(obj) == 2):
            raise _wrong(kind, name, f"got {type(obj).__name__}")
        declared = _load("assay.spec.predicates:PredicateKind")(*obj)
        if declared.kind != name:
            raise _wrong(kind, name, f"the spec's kind is {declared.kind!r}")
        _load("assay.verify.registry:register_predicate")(*obj, replace=replace)
        return obj
    if kind == "world":
        obj.kind = name
    return registry_of(kind).register(name, obj, replace=replace)


def _wrong(kind: str, name: str, why: str) -> UsageError:
    return UsageError(f"register({kind!r}, {name!r}, ...): OBJ must be {_WHAT[kind]}; {why}")


__all__ = ["PLUGIN_KINDS", "register", "registry_of"]
