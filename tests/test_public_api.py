"""The curated public face resolves completely, and the extension points are in it."""

from __future__ import annotations

import assay


def test_every_public_name_resolves() -> None:
    for name in assay.__all__:
        assert getattr(assay, name) is not None, name


def test_extension_points_are_public() -> None:
    for name in ("AgentAdapter", "SandboxBackend", "PredicateSpec", "evaluator", "HarnessService", "hookimpl",
                 "start_run", "resume_run", "validate_suite", "RunDir", "verify_run", "score_run", "build_report",
                 "compare_scores"):
        assert name in assay.__all__


def test_unknown_name_is_attribute_error() -> None:
    import pytest

    with pytest.raises(AttributeError):
        assay.definitely_not_public  # noqa: B018
