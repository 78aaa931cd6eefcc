"""What the scorer takes from a trial folder where the folder is read: its files (the store's
:func:`~assay.store.scan_read.load_trial`) and, from the very bytes hashed there, the trace's facts
and the screen's flags per attempt, and the screen of the artifacts its passing results name.

A trace used to be read three times in a score: hashed by the reading, parsed for its facts,
parsed again by the screen (on a real run of 1,800 starter trials, screen and facts were 63% of
the scan). Here it is read once, hashed as it is parsed, in the reading process: one per core for
a large run (:mod:`assay.store.scan_workers` names :func:`load_chunk` to its workers), so the
checking process only looks the answers up. Every figure is the one the path-by-path functions
give (:func:`assay.score.evidence.trace_facts`, :func:`assay.score.screen.screen_attempt`): the
same parser, the same folds, one event at a time.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass, field
from typing import BinaryIO, Callable

from assay.records.pickled import positional_pickle
from assay.records.results import EndState
from assay.score.evidence import FactsFold
from assay.score.screen import ARTIFACT_SCREENS, Flag, Suspect, calls_in, screen_attempts, screen_events
from assay.score.trials import TraceFacts
from assay.store.fastread import decode_result
from assay.store.rundir import RunDir
from assay.store.scan import RunScan, TrialRead
from assay.store.scan_read import Loaded, load_trial
from assay.trace.event_view import EventView, event_views
from assay.trace.events import EventKind, TraceEvent
from assay.trace.writer import open_trace_text

#: the kinds of event that can name a call (screen.calls_in)
CALL_KINDS = frozenset((EventKind.tool_call, EventKind.model_response))
#: artifact screens kept per process (content-addressed: a repeat's identical diff is screened once)
ARTIFACT_MEMO = 4096


@positional_pickle
@dataclass(slots=True)
class TraceSight:
    """One pass over a trial's trace: per attempt number, its facts and the screen's call flags."""

    facts: dict[int, TraceFacts]
    flags: dict[int, list[Flag]]

    def facts_of(self, attempt: int) -> TraceFacts:
        """:func:`~assay.score.evidence.trace_facts` of this trace for ``attempt``."""
        got = self.facts.get(attempt)
        return FactsFold().facts() if got is None else got

    def flags_of(self, attempt: int) -> list[Flag]:
        """:func:`~assay.score.screen.screen_events` of this trace's events of ``attempt``."""
        return list(self.flags.get(attempt, ()))


@positional_pickle
@dataclass(slots=True)
class TrialSight:
    """What the reading of one trial folder saw beside its files."""

    trace: TraceSight | None  # None: the folder held no trace
    artifacts: dict[tuple[str, str], list[Flag]] = field(default_factory=dict)  # (name, digest) -> flags

    def artifact_flags(self, name: str, digest: str, rd: RunDir) -> list[Flag]:
        """The screen of an artifact a passing result names (screened here when the reading did not)."""
        got = self.artifacts.get((name, digest))
        return list(got) if got is not None else list(_screened(rd, name, digest, ARTIFACT_SCREENS[name]))


class _Hashing(io.RawIOBase):
    """A file's bytes as they are read, each byte hashed once on its way."""

    def __init__(self, raw: BinaryIO, h: "hashlib._Hash") -> None:
        super().__init__()
        self.raw, self.h = raw, h

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray | memoryview) -> int:  # type: ignore[override]
        n = self.raw.readinto(b)  # type: ignore[attr-defined]
        if n:
            self.h.update(memoryview(b)[:n])
        return n or 0


def read_trace(fh: BinaryIO) -> tuple[str, TraceSight]:
    """(sha256 of every byte of the open trace, its sight): events parsed as
    :func:`~assay.trace.writer.iter_events` parses them (msgspec first: trace/event_view.py), folded
    per attempt in the trace's order."""
    h = hashlib.sha256()
    folds: dict[int, FactsFold] = {}
    calls: dict[int, list[EventView | TraceEvent]] = {}  # per attempt, the events that name calls
    for ev in event_views(open_trace_text(io.BufferedReader(_Hashing(fh, h)))):
        fold = folds.get(ev.attempt)
        if fold is None:
            fold = folds[ev.attempt] = FactsFold()
        fold.add(ev)
        if ev.kind in CALL_KINDS and calls_in(ev):  # the only events screen_events looks at
            calls.setdefault(ev.attempt, []).append(ev)
    flags = {n: found for n, evs in calls.items() if (found := screen_events(evs))}
    return h.hexdigest(), TraceSight({n: f.facts() for n, f in folds.items()}, flags)


#: the screened artifacts' names as a result's JSON spells them
_NAMED = tuple(f'"{name}"'.encode() for name in ARTIFACT_SCREENS)
_memo: dict[tuple[str, str, int, int, int], list[Flag]] = {}  # (path, name, inode, size, mtime) -> flags


def _artifacts_of(root: str, loaded: Loaded) -> dict[tuple[str, str], list[Flag]]:
    """The screens of the artifacts the folder's passing results name (a result that does not
    parse is left to the checking process, which names it)."""
    out: dict[tuple[str, str], list[Flag]] = {}
    rd: RunDir | None = None
    for f, raw in loaded.results.items():
        for key in _NAMED:
            if key in raw:
                break
        else:
            continue  # names no screened artifact (an escaped spelling is screened by the checking process)
        try:
            r = decode_result(raw, os.path.join(loaded.tdir, f))
        except Exception:  # noqa: BLE001 - damaged: the checking process names it (IntegrityError) or fails as before
            continue
        if r.end_state is not EndState.passed:
            continue
        for name, screen in ARTIFACT_SCREENS.items():
            digest = r.artifacts.get(name)
            if not digest or (name, digest) in out:
                continue
            rd = rd or RunDir(root)
            out[(name, digest)] = _screened(rd, name, digest, screen)
    return out


def _screened(rd: RunDir, name: str, digest: str, screen: Callable[[RunDir, str], list[Flag]]) -> list[Flag]:
    """``screen`` of one artifact, kept for the same file (path, inode, size, modification time): a
    run's repeats share identical diffs, and a file changed or replaced is screened again."""
    path = rd.artifact_file(digest)
    try:
        st = os.stat(path)
    except OSError:
        return screen(rd, digest)  # missing: the screen names it
    key = (path, name, st.st_ino, st.st_size, st.st_mtime_ns)
    got = _memo.get(key)
    if got is None:
        if len(_memo) >= ARTIFACT_MEMO:
            _memo.clear()
        got = _memo[key] = screen(rd, digest)
    return got


def load_sighted(root: str, tid: str, known_plain: bool, every: bool) -> Loaded | None:
    """:func:`~assay.store.scan_read.load_trial`, its ``extra`` the folder's :class:`TrialSight`."""
    loaded = load_trial(root, tid, known_plain, every, read_trace=read_trace)
    if loaded is not None:
        loaded.extra = TrialSight(loaded.extra, _artifacts_of(root, loaded))
    return loaded


def load_chunk(root: str, items: list[tuple[str, bool]], every: bool) -> list[Loaded | None]:
    """:func:`load_sighted` of each (trial id, known plain), in order: one request to a worker."""
    return [load_sighted(root, tid, plain, every) for tid, plain in items]


#: the name the scan's reading processes are given
LOAD = f"{__name__}:load_chunk"


def sight_of(read: TrialRead) -> TrialSight | None:
    """The sight a scan's reading took of this trial folder (None: it was read path by path)."""
    return read.extra if isinstance(read.extra, TrialSight) else None


def screen_read(rd: RunDir, tid: str, read: TrialRead) -> list[tuple[int, Suspect]]:
    """The suspects among one trial folder's attempts as a scan read them, each with its place
    among them. The folder's sight serves a result that names this trial; one copied from
    another trial is screened as it always was, by the trace of the trial it names (no trace in
    the folder's listing: none to screen; None lets the screen look for itself)."""
    # no sight (a trial of the results log, or one read path by path): its artifacts are screened
    # here, through the same memo as a reading process's (a run's repeats share identical diffs)
    if not read.has_trace and not any(a.artifacts or a.errors for a in read.attempts):
        return []  # no trace, no artifact, no lost evidence: no flag could come (most trials of a results log)
    sight = sight_of(read) or TrialSight(None)
    has_trace = None if read.has_trace else False
    return [(k, x) for k, a in enumerate(read.attempts)
            for x in screen_attempts(rd, [a], has_trace, sight if a.trial_id == tid else None)]


def screen_scanned(rd: RunDir, *, workers: int | None = None) -> list[Suspect]:
    """:func:`~assay.score.screen.screen_run`'s list, read by one unchecked scan of every trial
    folder in order: what `assay audit`, the viewer's audit queue and the labels check list."""
    scan = RunScan(rd, verify=False, workers=workers, load=LOAD)
    ids = sorted(scan.all_trials())  # folders, then trials of the log: by id, as screen_run lists them
    out: list[Suspect] = []
    for tid, read in zip(ids, scan.trials(ids)):
        if read is not None:
            out.extend(x for _k, x in screen_read(rd, tid, read))
    return out

__all__ = ["LOAD", "TraceSight", "TrialSight", "load_chunk", "load_sighted", "read_trace", "screen_read",
           "screen_scanned", "sight_of"]
