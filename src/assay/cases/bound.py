"""What an import keeps of one trace, bounded: a 64 MiB trace line must not become a 64 MiB
candidate and draft task. Every cut is recorded (field, size, kept) and said by the import."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from assay.cases.traces import ImportedTrace

#: characters kept of one text (prompt, output, a message)
MAX_TEXT = 64 * 1024
#: characters kept of one tool call's arguments or result, as JSON
MAX_JSON = 64 * 1024
#: messages and tool calls kept of one trace
MAX_ITEMS = 1000
CUT_MARK = "\n[... cut by assay import: {n} characters not kept]"


def _text(value: str | None, where: str, cuts: list[dict[str, Any]]) -> str | None:
    if value is None or len(value) <= MAX_TEXT:
        return value
    cuts.append({"field": where, "chars": len(value), "kept": MAX_TEXT})
    return value[:MAX_TEXT] + CUT_MARK.format(n=len(value) - MAX_TEXT)


def _json(value: Any, where: str, cuts: list[dict[str, Any]]) -> Any:
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_JSON:
        return value
    cuts.append({"field": where, "chars": len(text), "kept": MAX_JSON})
    return {"_cut_by_import": True, "chars": len(text), "head": text[:MAX_JSON]}


def bounded(t: ImportedTrace) -> tuple[ImportedTrace, list[dict[str, Any]]]:
    """The trace with every kept field within the limits above, and the list of what was cut."""
    cuts: list[dict[str, Any]] = []
    messages = t.messages[:MAX_ITEMS]
    calls = t.tool_calls[:MAX_ITEMS]
    for name, full, kept in (("messages", t.messages, messages), ("tool_calls", t.tool_calls, calls)):
        if len(full) > len(kept):
            cuts.append({"field": name, "items": len(full), "kept": len(kept)})
    messages = [{**m, "text": _text(m.get("text"), f"messages.{i}.text", cuts) or ""} for i, m in enumerate(messages)]
    calls = [{**c, **{k: _json(c[k], f"tool_calls.{i}.{k}", cuts) for k in ("arguments", "result") if k in c}}
             for i, c in enumerate(calls)]
    out = replace(t, prompt=_text(t.prompt, "prompt", cuts), output=_text(t.output, "output", cuts),
                  messages=messages, tool_calls=calls, correction=_json(t.correction, "correction", cuts))
    return out, cuts
