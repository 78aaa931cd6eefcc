"""Append-only trace files: one JSONL per trial, events numbered without gaps."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from assay.trace.events import EventKind, Source, TraceEvent
from assay.trace.redact import Redactor

Listener = Callable[[TraceEvent], None]


class TraceWriter:
    """Writes one trial's events, redacted, each as one line.

    Unbuffered, each event is appended as it happens. Buffered (the run engine's attempts),
    the attempt's events stay in memory (:meth:`events`) and are written once, in one append,
    by :meth:`flush` when the attempt is sealed; listeners see every event as it is recorded.
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
        self._pending: list[str] = []  # lines not yet written (buffered writers only)
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
            line = ev.model_dump_json() + "\n"
            if self.buffered:
                self._events.append(ev)
                self._pending.append(line)
            else:
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
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

    def flush(self) -> None:
        """Write the events not yet written, in one append, and fsync them."""
        with self._lock:
            lines, self._pending = self._pending, []
            if not lines:
                return
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("".join(lines))
                f.flush()
                os.fsync(f.fileno())

    def sync(self) -> None:
        """fsync the trace file (called at attempt boundaries)."""
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def iter_events(path: Path) -> Iterator[TraceEvent]:
    """Every complete event of a trace file; torn lines from a killed runner are skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                yield TraceEvent.model_validate(json.loads(line))
            except (ValueError, TypeError):
                continue


def read_events(path: Path, *, attempt: int | None = None) -> list[TraceEvent]:
    return [e for e in iter_events(path) if attempt is None or e.attempt == attempt]
