"""What one turn of a conversation said, read back from the trace for the verifier of that turn
(here, below both the conversation loop that records it and the verifier that reads it).

The harness records each turn's user message (``user_message``) and the agent's answer of the
turn (``log`` ``turn_ended``, ``final_text``) itself, as the turn happens. A predicate judging turn
N (the judge) reads them here, never from an event the agent's own session produced: an agent can
write events of any kind into its session, but never a harness event, so it cannot forge which
text counts as its answer of a turn or what the user asked.
"""

from __future__ import annotations

from collections.abc import Iterable

from assay.trace.events import EventKind, Source, TraceEvent

#: how much of a turn's answer the trace keeps: the last characters, as of a final answer
#: (``run/attempt/phases.record_agent``), so a judge of turn N reads no more and no less than a final judge
ANSWER_CHARS = 4000


def _harness(events: Iterable[TraceEvent], kind: EventKind, n: int, event: str | None = None) -> TraceEvent | None:
    found = None
    for e in events:
        if e.source is Source.harness and e.kind is kind and e.data.get("turn") == n \
                and (event is None or e.data.get("event") == event):
            found = e
    return found


def turn_answer(events: Iterable[TraceEvent], n: int) -> str | None:
    """The agent's answer of turn ``n`` (None: the turn gave none, or never ended)."""
    e = _harness(events, EventKind.log, n, "turn_ended")
    text = e.data.get("final_text") if e is not None else None
    return text if isinstance(text, str) else None


def last_turn(events: Iterable[TraceEvent]) -> int | None:
    """The last turn that ended (None: not a conversation, or no turn ended)."""
    turns = [e.data.get("turn") for e in events if e.source is Source.harness and e.kind is EventKind.log
             and e.data.get("event") == "turn_ended"]
    return max((t for t in turns if isinstance(t, int)), default=None)


def turn_request(events: Iterable[TraceEvent], n: int) -> str | None:
    """What the user said to open turn ``n`` (None: it was never said)."""
    e = _harness(events, EventKind.user_message, n)
    text = e.data.get("text") if e is not None else None
    return text if isinstance(text, str) else None
