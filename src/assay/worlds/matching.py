"""Matching recorded call arguments and rows against expected values (shared by the world
session's behaviour observation and the verifier's predicates)."""

from __future__ import annotations

import fnmatch
from typing import Any

from assay.untrusted import bounded_re

TOLERANCE = 0.005


def value_matches(expected: Any, actual: Any) -> bool:
    """Equality, with numbers compared to within a cent and strings prefixed ``re:`` as a regex
    (full match, bounded in time: :class:`~assay.untrusted.bounded_re.MatchTimeout` when the agent's
    value makes it run too long, for the caller to resolve the stricter way) or ``glob:`` as a glob."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected == actual
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return abs(float(expected) - float(actual)) <= TOLERANCE
    if isinstance(expected, str) and expected.startswith("re:"):
        return isinstance(actual, str) and bounded_re.fullmatch(expected[3:], actual, dotall=True) is not None
    if isinstance(expected, str) and expected.startswith("glob:"):
        return isinstance(actual, str) and fnmatch.fnmatchcase(actual, expected[5:])
    if isinstance(expected, dict) and isinstance(actual, dict):
        return subset_matches(expected, actual)
    return bool(expected == actual)


def subset_matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    """Every expected key is present in ``actual`` with a matching value."""
    return all(k in actual and value_matches(v, actual[k]) for k, v in expected.items())


def tool_matches(pattern: str, name: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern)
