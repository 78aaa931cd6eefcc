"""Trace: the typed, sequenced event model, its writer and redaction."""

from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter, iter_events, read_events

__all__ = ["EventKind", "Source", "TraceEvent", "Redactor", "TraceWriter", "iter_events", "read_events"]
