"""The task's regular expressions over the agent's text, matched in the harness's own process
(predicates, world expectations, a scripted user's rules).

An ordinary pattern can backtrack quadratically: ``^Total: .*[0-9]+ EUR$`` over one line of
300,000 digits ran for minutes in ``re``, and the verifier's timeout cannot interrupt a match that
holds the event loop. The ``regex`` module (``re``-compatible) takes a time limit per match; a
match past it is :class:`MatchTimeout`, which a predicate reports as its failure with evidence
(unknown is failure, and the agent wrote the text)."""

from __future__ import annotations

from typing import Annotated, Any

import regex
from pydantic import AfterValidator

#: seconds one match may take (an honest match over the 16 MiB a predicate reads takes far less)
MATCH_TIMEOUT_S = 2.0


class MatchTimeout(Exception):
    """The match did not end within :data:`MATCH_TIMEOUT_S`."""


def search(pattern: str, text: str, *, multiline: bool = False, ignorecase: bool = False) -> regex.Match[str] | None:
    """``re.search``, bounded in time."""
    flags = (regex.MULTILINE if multiline else 0) | (regex.IGNORECASE if ignorecase else 0)
    try:
        return regex.search(pattern, text, flags, timeout=MATCH_TIMEOUT_S)
    except TimeoutError:
        raise MatchTimeout(pattern) from None


def fullmatch(pattern: str, text: str, *, dotall: bool = False) -> regex.Match[str] | None:
    """``re.fullmatch``, bounded in time."""
    try:
        return regex.fullmatch(pattern, text, regex.DOTALL if dotall else 0, timeout=MATCH_TIMEOUT_S)
    except TimeoutError:
        raise MatchTimeout(pattern) from None


def timed_out() -> dict[str, float]:
    """The evidence a predicate records for a match past its time."""
    return {"regex_timeout_s": MATCH_TIMEOUT_S}


def valid_pattern(pattern: str) -> str:
    """A task's pattern, refused when it loads if it does not compile (else every attempt would
    end as the verifier's crash)."""
    try:
        regex.compile(pattern)
    except regex.error as e:
        raise ValueError(f"{pattern!r} is not a regular expression ({e}); fix the pattern (Python `re` syntax)") from None
    return pattern


def valid_re_values(values: dict[str, Any]) -> dict[str, Any]:
    """Expected values where a string ``re:PATTERN`` is a pattern (world and call matching):
    every such pattern, at any depth, must compile."""
    stack: list[Any] = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, str) and v.startswith("re:"):
            valid_pattern(v[3:])
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return values


#: a task field holding a pattern
Pattern = Annotated[str, AfterValidator(valid_pattern)]
#: a task field of expected values where ``re:`` strings are patterns
ReValues = Annotated[dict[str, Any], AfterValidator(valid_re_values)]
