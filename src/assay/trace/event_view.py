"""A trace's events as the scorer's reading of a trial folder folds them (score/trial_sight.py):
read-only records with the fields of :class:`~assay.trace.events.TraceEvent`, decoded by msgspec
straight from each line, at about 2.5x the speed of pydantic's own JSON parser (a real trial has
ten events or so, and a run of 10^5 trials a million). A line msgspec refuses goes the reference
way, :func:`~assay.trace.writer.events_of_lines`, so every line gives exactly the event that parser
gives, or is skipped exactly when it skips it (tests/trace/test_event_lines.py holds the two to
each other on hostile lines)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Any

import msgspec

from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.writer import events_of_lines


class EventView(msgspec.Struct, forbid_unknown_fields=True, frozen=True, gc=False):
    """One event, as :class:`TraceEvent` constrains it (the same fields, bounds and closed set of
    fields); what a reader of ``seq``, ``attempt``, ``kind``, ``data``... sees is the same. Not
    tracked by the garbage collector: decoded JSON holds no cycle."""

    seq: Annotated[int, msgspec.Meta(ge=0)]
    ts: float
    trial_id: str
    attempt: Annotated[int, msgspec.Meta(ge=1)]
    source: Source
    kind: EventKind
    data: dict[str, Any] = {}


_DECODE = msgspec.json.Decoder(EventView).decode


def event_views(lines: Iterable[str]) -> Iterator[EventView | TraceEvent]:
    """The events of a trace's lines, as :func:`events_of_lines` gives them (a torn or foreign line
    skipped), each an :class:`EventView` when msgspec reads it, else that parser's event."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            yield _DECODE(line)
        except msgspec.DecodeError:  # refused (a validation error is one): the reference decides
            yield from events_of_lines((line,))


__all__ = ["EventView", "event_views"]
