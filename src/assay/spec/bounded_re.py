"""The task's regular expressions over the agent's text, matched in the harness's own process
(predicates, world expectations, a scripted user's rules).

An ordinary pattern can backtrack quadratically: ``^Total: .*[0-9]+ EUR$`` over one line of
300,000 digits ran for minutes in ``re``, and the verifier's timeout cannot interrupt a match that
holds the event loop. The ``regex`` module (``re``-compatible) takes a time limit per match; a
match past it is :class:`MatchTimeout`, which a predicate reports as its failure with evidence
(unknown is failure, and the agent wrote the text)."""

from __future__ import annotations

import regex

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
