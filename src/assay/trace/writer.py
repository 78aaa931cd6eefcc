"""Append-only trace files: one JSONL per trial, events numbered without gaps."""

from __future__ import annotations

import io
import json
import os
import threading
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any, BinaryIO, Callable, Iterable, Iterator, TextIO

from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.redact import Redactor

Listener = Callable[[TraceEvent], None]


class TraceWriter:
    """Writes one trial's events, redacted, each as one line.

    Unbuffered, each event is appended as it happens. Buffered (the run engine's attempts),
    the attempt's events stay in memory (:meth:`events`); the run's recorder takes them
    (:meth:`take`) and writes them once, in one append, when the attempt is sealed (or
    :meth:`flush` does, for a writer used alone). Listeners see every event as it is recorded.
    Resuming a trial continues the numbering after the last complete event on disk; a
    half-written last line (the runner was killed mid-write) is kept as it is and fenced off
    with a newline, never rewritten.
    """

    def __init__(self, path: Path, trial_id: str, *, redactor: Redactor | None = None,
                 listeners: list[Listener] | None = None, buffered: bool = False):
        self.path = path
        self.trial_id = trial_id
        self.redactor = redactor or Redactor()
        self.listeners = list(listeners or [])
        self.buffered = buffered
        self._attempt = 1
        self._events: list[TraceEvent] = []  # the current attempt's events (buffered writers only)
        self._pending: list[TraceEvent] = []  # events not yet written (buffered writers only)
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        if path.exists():
            raw = path.read_bytes()
            last = None
            for ev in iter_events(path):
                last = ev
            self._seq = 0 if last is None else last.seq + 1
            if raw and not raw.endswith(b"\n"):
                with open(path, "ab") as f:
                    f.write(b"\n")

    @property
    def attempt(self) -> int:
        return self._attempt

    @attempt.setter
    def attempt(self, n: int) -> None:
        """A new attempt starts: its events are the ones kept from now on."""
        with self._lock:
            self._attempt = n
            self._events = []

    def emit(self, source: Source | str, kind: EventKind | str, data: dict[str, Any] | None = None,
             *, ts: float | None = None) -> TraceEvent:
        """Record one event; returns it as recorded (redacted)."""
        clean = self.redactor.data(data or {})
        with self._lock:
            ev = TraceEvent(seq=self._seq, ts=ts if ts is not None else time.time(), trial_id=self.trial_id,
                            attempt=self._attempt, source=Source(source), kind=EventKind(kind), data=clean)
            if self.buffered:
                self._events.append(ev)
                self._pending.append(ev)
            else:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(ev.model_dump_json() + "\n")
                    f.flush()
            self._seq += 1
        for listener in self.listeners:
            listener(ev)
        return ev

    def events(self) -> list[TraceEvent]:
        """The current attempt's events, in order (read back from the file when unbuffered)."""
        if not self.buffered:
            return read_events(self.path, attempt=self._attempt)
        with self._lock:
            return list(self._events)

    def take(self) -> list[TraceEvent]:
        """The events not yet written, handed over to whoever writes them (buffered writers)."""
        with self._lock:
            pending, self._pending = self._pending, []
            return pending

    def flush(self) -> None:
        """Write the events not yet written, in one append, and fsync them."""
        append_events(self.path, self.take())

    def sync(self) -> None:
        """fsync the trace file (called at attempt boundaries)."""
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def append_events(path: Path, events: Sequence[TraceEvent]) -> None:
    """Append events to a trace file in one write, then fsync: the one way traces reach disk
    from memory."""
    if not events:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(ev.model_dump_json() + "\n" for ev in events))
        f.flush()
        os.fsync(f.fileno())


def iter_events(path: Path) -> Iterator[TraceEvent]:
    """Every complete event of a trace file; torn lines from a killed runner are skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        yield from events_of_lines(f)


def open_trace_text(raw: BinaryIO) -> TextIO:
    """A trace's bytes as the text :func:`iter_events` reads (UTF-8, damage replaced, universal
    newlines): a reader that hashes the bytes as they pass reads the very events this one does."""
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")  # type: ignore[arg-type]


def events_of_lines(lines: Iterable[str]) -> Iterator[TraceEvent]:
    """The events of a trace's lines (a torn or foreign line is skipped): the one parser every
    reader of a trace uses. What an event is, is ``TraceEvent.model_validate(json.loads(line))``;
    pydantic's own JSON parser gives the same event in a third of the time, so it is asked first
    and trusted only when it accepts (it refuses a few lines the standard library accepts, a lone
    surrogate escape among them, and those go the long way: tests/trace/test_event_lines.py)."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            ev = TraceEvent.model_validate_json(line)
        except ValueError:
            try:
                ev = TraceEvent.model_validate(json.loads(line))
            except (ValueError, TypeError):
                continue
        yield ev


def read_events(path: Path, *, attempt: int | None = None) -> list[TraceEvent]:
    return [e for e in iter_events(path) if attempt is None or e.attempt == attempt]
