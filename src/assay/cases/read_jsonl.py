"""assay's documented JSONL trace shape: one production conversation per line.

    {"trace_id": "t-1", "prompt": "Book ...",                 # or "messages": [{role, content}]
     "tool_calls": [{"name": "ledger.record_entry", "arguments": {...}, "result": {...}, "ok": true}],
     "output": "Recorded ...", "correction": {"arguments": {"category": "dining"}} | "free text",
     "task": "optional source task id", "category": "optional"}

``trace_id`` is required; everything else is optional. It is the shape to write from a log of
one's own (the essay's owner-only JSONL message log maps onto it line by line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.cases.traces import ImportedTrace, TraceFormatError, messages_of, parse_json_maybe, read_json_or_lines, text_of


def _one(raw: Any, where: str) -> ImportedTrace:
    if not isinstance(raw, dict) or not raw.get("trace_id"):
        raise TraceFormatError(f"{where}: each line must be an object with a 'trace_id' (docs/production-loop.md)")
    calls = raw.get("tool_calls") or []
    if not isinstance(calls, list):
        raise TraceFormatError(f"{where}: 'tool_calls' must be a list")
    t = ImportedTrace(trace_id=str(raw["trace_id"]), format="jsonl",
                      prompt=raw["prompt"] if isinstance(raw.get("prompt"), str) else None,
                      messages=messages_of(raw.get("messages") or []),
                      tool_calls=[{"name": str(c.get("name") or ""), "arguments": parse_json_maybe(c.get("arguments")) or {},
                                   "result": c.get("result"), "ok": c.get("ok", True) is not False}
                                  for c in calls if isinstance(c, dict)],
                      output=text_of(raw.get("output")), correction=parse_json_maybe(raw.get("correction")),
                      source_task=raw.get("task") if isinstance(raw.get("task"), str) else None,
                      category=raw.get("category") if isinstance(raw.get("category"), str) else None)
    return t.finish()


def read_jsonl(path: Path) -> list[ImportedTrace]:
    docs = read_json_or_lines(path)
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    return [_one(d, f"{path} (record {n})") for n, d in enumerate(docs, 1)]
