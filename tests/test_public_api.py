"""The curated public face resolves completely, and the extension points are in it."""

from __future__ import annotations

import assay


def test_every_public_name_resolves() -> None:
    for name in assay.__all__:
        assert getattr(assay, name) is not None, name


def test_extension_points_are_public() -> None:
    for name in ("AgentAdapter", "SandboxBackend", "PredicateSpec", "evaluator", "HarnessService", "hookimpl",
                 "start_run", "resume_run", "validate_suite", "RunDir", "verify_run", "score_run", "build_report",
                 "compare_scores", "World", "world", "ModelBackend", "BackendSession", "register_model_backend",
                 "register_sandbox_backend", "register_agent", "register_product", "register_predicate",
                 "UnknownPlugin"):
        assert name in assay.__all__


def test_a_plugin_author_needs_nothing_below_the_facade() -> None:
    """The classes a world, a model backend and a sandbox backend subclass, and the functions that
    register them, are the very objects the registries use (not copies)."""
    from assay.gateway.backends.base import MODEL_BACKENDS, ModelBackend
    from assay.sandbox.registry import BACKENDS
    from assay.worlds.base import World
    from assay.worlds.registry import WORLDS

    assert assay.World is World and assay.ModelBackend is ModelBackend
    assert issubclass(WORLDS.get("ledger"), assay.World)
    assert all(issubclass(cls, assay.ModelBackend) for _, cls in MODEL_BACKENDS.items())
    assert all(issubclass(cls, assay.SandboxBackend) for _, cls in BACKENDS.items())
    assert assay.register_sandbox_backend.__module__ == "assay.sandbox.registry"
    assert assay.register_model_backend.__module__ == "assay.gateway.backends.base"


def test_no_ambiguous_register_backend() -> None:
    """Two kinds of backend, two names: the old ``register_backend`` said neither."""
    assert "register_backend" not in assay.__all__


def test_unknown_name_is_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError):
        assay.definitely_not_public  # noqa: B018


def test_lazy_packages_resolve_every_name_they_export() -> None:
    """``assay.spec`` and ``assay.agents`` read their names on first use (so a command's help
    builds no model): each name still imports from the package, and is its module's own object."""
    import importlib

    import pytest

    for package in ("assay.spec", "assay.agents"):
        pkg = importlib.import_module(package)
        for name in pkg.__all__:
            value = getattr(pkg, name)
            assert value is getattr(importlib.import_module(f"{package}.{pkg._FROM[name]}"), name), (package, name)
        assert set(pkg.__all__) == set(pkg._FROM) and set(pkg.__all__) <= set(dir(pkg))
        with pytest.raises(AttributeError):
            pkg.definitely_not_exported  # noqa: B018
    from assay.spec import NetworkProfile, TaskSpec, load_suite  # noqa: F401 - the import form users write
    from assay.spec.budget import NetworkProfile as FromBudget

    assert FromBudget is NetworkProfile
