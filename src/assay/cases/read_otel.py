"""OTLP/JSON traces (the protobuf JSON mapping of ``TracesData`` / ``ExportTraceServiceRequest``)
to imported traces.

Shape read (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)::

    {"resourceSpans": [{"resource": {...}, "scopeSpans": [{"scope": {...}, "spans": [
        {"traceId": "5b8e...", "spanId": "...", "parentSpanId": "...", "name": "...",
         "startTimeUnixNano": "1700000000000000000", "attributes": [{"key": k, "value": AnyValue}],
         "events": [{"name": "...", "timeUnixNano": "...", "attributes": [...]}]}]}]}]}

Ids are hex (the OTLP/JSON rule); base64 ids, as a generic protobuf JSON printer writes them,
are accepted and turned into hex. One document or JSON Lines (the collector's file exporter).

What is taken from the GenAI semantic conventions: ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (structured or a JSON string), the older ``gen_ai.prompt`` /
``gen_ai.completion``, ``gen_ai.user.message`` events, OpenInference ``input.value`` /
``output.value``; tool spans (``gen_ai.operation.name = execute_tool``) with ``gen_ai.tool.name``,
``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``. assay's own export adds
``assay.task_id``, ``assay.category`` and the verdict (``gen_ai.evaluation.result`` event). The
user's correction: a span event ``user.correction`` (attribute ``correction``, ``content`` or
``body``) or a span attribute ``user.correction``.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from assay.cases.traces import (ImportedTrace, TraceFormatError, expect_list, messages_of, parse_json_maybe,
                                read_json_or_lines, text_of)

CORRECTION_EVENTS = ("user.correction", "assay.user.correction", "user_correction")


def any_value(v: Any) -> Any:
    """Decode an OTLP AnyValue."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        try:
            return int(v["intValue"])
        except (TypeError, ValueError):
            return v["intValue"]
    if "doubleValue" in v:
        return v["doubleValue"]
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(items, list):
        for kv in items:
            if isinstance(kv, dict) and isinstance(kv.get("key"), str):
                out[kv["key"]] = any_value(kv.get("value"))
    return out


def hex_id(value: Any) -> str:
    """A trace id as lowercase hex, whether it came hex (OTLP/JSON) or base64 (protobuf JSON)."""
    s = str(value or "")
    if s and all(c in "0123456789abcdefABCDEF" for c in s) and len(s) in (16, 32):
        return s.lower()
    try:
        return base64.b64decode(s, validate=True).hex()
    except (binascii.Error, ValueError):
        return s


def _spans(doc: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(doc, dict) or "resourceSpans" not in doc:
        raise TraceFormatError(f"{where}: not OTLP/JSON traces (no 'resourceSpans'); "
                               "use --format langfuse or jsonl for other exports")
    spans = []
    for i, rs in enumerate(expect_list(doc["resourceSpans"], f"{where}: resourceSpans", "resource spans")):
        for j, ss in enumerate(expect_list((rs or {}).get("scopeSpans", []), f"{where}: resourceSpans.{i}.scopeSpans",
                                           "scope spans")):
            for k, sp in enumerate(expect_list((ss or {}).get("spans", []),
                                               f"{where}: resourceSpans.{i}.scopeSpans.{j}.spans", "spans")):
                if not isinstance(sp, dict) or not sp.get("traceId"):
                    raise TraceFormatError(f"{where}: resourceSpans.{i}.scopeSpans.{j}.spans.{k}: a span needs a traceId")
                spans.append(sp)
    return spans


def _start(sp: dict[str, Any]) -> int:
    try:
        return int(sp.get("startTimeUnixNano") or 0)
    except (TypeError, ValueError):
        return 0


def _absorb(t: ImportedTrace, sp: dict[str, Any]) -> None:
    a = attributes(sp.get("attributes"))
    t.source_task = t.source_task or a.get("assay.task_id")
    t.category = t.category or a.get("assay.category")
    if a.get("assay.end_state") and sp.get("name") == "assay.trial":
        t.verdict = str(a["assay.end_state"])
    for key in ("gen_ai.input.messages", "gen_ai.prompt", "input.value"):
        if key in a and not t.messages:
            t.messages = messages_of(a[key])
    for key in ("gen_ai.output.messages", "gen_ai.completion", "output.value"):
        if key in a:
            msgs = messages_of(a[key])
            t.output = msgs[-1]["text"] if msgs else text_of(a[key])
    if a.get("user.correction") is not None:
        t.correction = parse_json_maybe(a["user.correction"])
    if a.get("gen_ai.operation.name") == "execute_tool" or str(sp.get("name", "")).startswith("execute_tool"):
        status = sp.get("status") or {}
        t.tool_calls.append({"name": str(a.get("gen_ai.tool.name") or str(sp.get("name", ""))[13:]),
                             "arguments": parse_json_maybe(a.get("gen_ai.tool.call.arguments")) or {},
                             "result": parse_json_maybe(a.get("gen_ai.tool.call.result")),
                             "ok": status.get("code") not in (2, "STATUS_CODE_ERROR")})
    for ev in sp.get("events") or []:
        if not isinstance(ev, dict):
            continue
        ea = attributes(ev.get("attributes"))
        name = ev.get("name")
        if name == "gen_ai.user.message":
            txt = text_of(ea.get("content")) or text_of(ev.get("body"))
            if txt:
                t.messages.append({"role": "user", "text": txt})
        elif name in CORRECTION_EVENTS:
            raw = next((ea[k] for k in ("correction", "content", "body") if k in ea), None)
            t.correction = parse_json_maybe(raw if raw is not None else any_value(ev.get("body")))
        elif name == "gen_ai.evaluation.result" and ea.get("gen_ai.evaluation.score.label"):
            t.verdict = str(ea["gen_ai.evaluation.score.label"])


def read_otel(path: Path) -> list[ImportedTrace]:
    """Every trace in the file, spans in start order within each."""
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for n, doc in enumerate(read_json_or_lines(path), 1):
        for sp in _spans(doc, f"{path} (document {n})"):
            by_trace.setdefault(hex_id(sp["traceId"]), []).append(sp)
    out = []
    for tid, spans in by_trace.items():
        t = ImportedTrace(trace_id=tid, format="otel")
        for sp in sorted(spans, key=_start):
            _absorb(t, sp)
        out.append(t.finish())
    return out
