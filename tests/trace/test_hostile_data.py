"""Trace data comes from what the agent wrote (its session files, its tool arguments, its
stdout): nesting deep enough to pass the JSON parser (about 990 levels) must not break the
writer. Past about 250 levels pydantic cannot serialise an event, past the interpreter's
recursion limit the redactor cannot walk it; either would end the attempt as the harness's
crash, or stop the run when the recorder writes the events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.trace.events import EventKind, Source
from assay.trace.redact import MAX_DEPTH
from assay.trace.writer import TraceWriter, read_events


@pytest.mark.parametrize("depth", [300, 900])
def test_an_event_nested_as_deep_as_the_parser_takes_is_recorded_cut(tmp_path: Path, depth: int) -> None:
    nested = json.loads("[" * depth + '"AKIAQ7ZC4NARYXSECRET"' + "]" * depth)  # what a session file can hold
    w = TraceWriter(tmp_path / "trace.jsonl", "t", buffered=True)
    w.emit(Source.agent, EventKind.tool_call, {"name": "write", "args": nested})
    w.flush()
    [ev] = read_events(tmp_path / "trace.jsonl")
    level, node = 0, ev.data["args"]
    while isinstance(node, list):
        level, node = level + 1, node[0]
    assert level <= MAX_DEPTH and isinstance(node, str) and "deeper than" in node
    assert ev.data["name"] == "write"


def test_shallow_data_is_kept_whole_and_redacted(tmp_path: Path) -> None:
    w = TraceWriter(tmp_path / "trace.jsonl", "t", buffered=True)
    data = {"args": {"a": [[{"b": "AKIAQ7ZC4NARYXSECRET"}]]}}
    w.emit(Source.agent, EventKind.tool_call, data)
    w.flush()
    [ev] = read_events(tmp_path / "trace.jsonl")
    assert ev.data == {"args": {"a": [[{"b": "[REDACTED]"}]]}} or "AKIAQ7ZC4NARYXSECRET" not in json.dumps(ev.data)
    assert ev.data["args"]["a"][0][0].keys() == {"b"}
