"""What the harness services recorded for the verifier: the one typed channel from a service's
session (worlds, judge) to the predicates, the mutant generator and a conversation's turns.

It replaces a string-keyed dict: every reader names a field, and a typo is an attribute error at
once, not a silently empty ``.get``. Services fill the fields they own; :meth:`merge` combines the
reports of several services (a later non-empty field wins, as ``dict.update`` did), and
:meth:`payload` is the JSON an out-of-process plugin predicate reads, with the keys it always had.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

#: the payload key naming the conversation turn a verifier judges (absent: the final state)
TURN_KEY = "conversation_turn"


@dataclass(frozen=True)
class VerifierInputs:
    """Facts about an attempt that the workspace does not hold, recorded by the harness."""

    #: world kind -> ``{"initial": state, "final": state, "diff": diff}`` (redacted)
    worlds: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    #: world kind -> path of the redacted snapshot of its SQLite database (``world_sql`` reads it)
    world_db: Mapping[str, str] = field(default_factory=dict)
    #: the world tool calls the worlds recorded, in order (``name``, ``arguments``, ``executed``...)
    tool_calls: tuple[dict[str, Any], ...] = ()
    #: approval requests and their decisions
    approvals: tuple[dict[str, Any], ...] = ()
    #: the names of the canaries planted in the task (the security predicate looks for them)
    canaries: tuple[str, ...] = ()
    #: the behaviour verdict of a task with ``behaviour:`` (expected and wrong calls)
    behaviour: dict[str, Any] | None = None
    #: how the verifier reaches the judge model (an ``assay.judge.service.JudgeConnection``; typed
    #: loosely because records sit below the judge room)
    judge: Any = None
    #: world name -> every HTTP request its browser made, as the harness logged it (``http_request`` reads it)
    http_requests: Mapping[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    #: the conversation turn being verified (None: the attempt's final state)
    turn: int | None = None
    #: the worlds' other facts (security counts, fault plans and logs, duplicate side effects),
    #: read by no built-in predicate but handed to plugin predicates as before
    facts: Mapping[str, Any] = field(default_factory=dict)

    def merge(self, other: VerifierInputs) -> VerifierInputs:
        """``self`` with every field ``other`` set (non-empty) taken from ``other``."""
        changes = {f.name: getattr(other, f.name) for f in dataclasses.fields(self)
                   if getattr(other, f.name) not in (None, (), {})}
        if "facts" in changes:
            changes["facts"] = {**self.facts, **other.facts}
        return dataclasses.replace(self, **changes)

    def at_turn(self, n: int) -> VerifierInputs:
        return dataclasses.replace(self, turn=n)

    def payload(self) -> dict[str, Any]:
        """The JSON-able form plugin predicates read (the keys of the old dict)."""
        out: dict[str, Any] = {**self.facts}
        if self.worlds or self.world_db or self.tool_calls or self.approvals or self.canaries:
            out.update(worlds=dict(self.worlds), world_db=dict(self.world_db), tool_calls=list(self.tool_calls),
                       approvals=list(self.approvals), canaries=list(self.canaries))
        if self.behaviour is not None:
            out["behaviour"] = self.behaviour
        if self.http_requests:
            out["http_requests"] = {k: list(v) for k, v in self.http_requests.items()}
        if self.judge is not None:
            out["judge"] = self.judge
        if self.turn is not None:
            out[TURN_KEY] = self.turn
        return out
