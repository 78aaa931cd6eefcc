"""The scripted user: the next message of a conversation, keyed on what the agent did in the
turn before (the world's own record of executed calls, and the agent's final text)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from assay.spec.conversation import ConversationSpec, Turn, WhenAgent
from assay.untrusted import bounded_re


@dataclass(frozen=True)
class TurnFacts:
    """What one turn of the agent left behind, as the harness saw it (never the agent's claim)."""

    number: int
    executed: tuple[str, ...] = ()  # world tools executed in this turn, in order (the world's record)
    final_text: str = ""
    timed_out: bool = False
    exit_code: int | None = None
    notes: dict[str, object] = field(default_factory=dict)


def holds(when: WhenAgent, facts: TurnFacts) -> bool:
    """Whether every field of ``when`` holds for the agent's last turn."""
    if when.called is not None and when.called not in facts.executed:
        return False
    if when.not_called is not None and when.not_called in facts.executed:
        return False
    if when.said is not None:
        try:
            if bounded_re.search(when.said, facts.final_text, ignorecase=True) is None:
                return False
        except bounded_re.MatchTimeout:  # the agent's text ran the rule's pattern too long: no rule holds
            return False
    return True


@dataclass(frozen=True)
class UserLine:
    """The user's next message, or why there is none (``off_script``)."""

    text: str | None
    by: str  # "script" | "simulator"
    rule: int | None = None  # which reply rule spoke (None: fixed text or `otherwise`)
    end: str = "off_script"  # why there is no message (the simulator: "goal" when done, "budget" when spent)


def scripted_line(turn: Turn, previous: TurnFacts | None) -> UserLine:
    """What the scripted user says in ``turn``, given the agent's previous turn."""
    if turn.user is not None:
        return UserLine(turn.user, "script")
    if previous is not None:
        for i, rule in enumerate(turn.reply):
            if holds(rule.when, previous):
                return UserLine(rule.user, "script", i)
    return UserLine(turn.otherwise, "script")


def stop_word(conv: ConversationSpec, text: str) -> str | None:
    """The stop word in the user's message, if any (case-insensitive, whole word)."""
    for w in conv.stop_words:
        if re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text, re.IGNORECASE):
            return w
    return None
