"""Production-trace files in the documented shapes, with planted secrets that must not survive."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

API_KEY = "sk-live" + "Zq8Xw2Lk9Pm4Rt7Vb3Nc6Hd1"
CANARY = "cnry_" + "9f1c2e7a5b3d8e4f6a0b1c2d"
EMAIL = "wen.li@personal-mail.example"
PHONE = "+86 138 0013 8000"
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "c2lnbmF0dXJlLXNpZ25hdHVyZQ"
PLANTED = (API_KEY, CANARY, EMAIL, PHONE, JWT, "Zq8Xw2Lk9Pm4Rt7Vb3Nc6Hd1", "9f1c2e7a5b3d8e4f6a0b1c2d")

WATER_PROMPT = "Bought bottled water at Quickmart, 6 CNY, 2026-08-16. Book it."


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _span(trace_id: str, span_id: str, name: str, start: int, attrs: dict[str, Any], events=(), parent: str = "",
          status: int = 1) -> dict[str, Any]:
    return {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent, "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1000),
            "attributes": [_attr(k, v) for k, v in attrs.items()], "events": list(events), "status": {"code": status}}


def otel_water_trace(trace_id: str) -> list[dict[str, Any]]:
    """An instrumented production agent (GenAI conventions, content capture on): the user books
    water, the agent files it under household, the user corrects the category to dining."""
    t0 = 1_790_000_000_000_000_000
    user = {"role": "user", "parts": [{"type": "text", "content": f"{WATER_PROMPT} (my sync key is {API_KEY})"}]}
    agent = _span(trace_id, "a1b2c3d4e5f60718", "invoke_agent bookkeeper", t0, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bookkeeper",
        "gen_ai.input.messages": json.dumps([user]),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": f"Booked. Receipt mailed to {EMAIL}."}]}]),
    }, events=[{"name": "user.correction", "timeUnixNano": str(t0 + 5000),
                "attributes": [_attr("correction", {"arguments": {"category": "dining"}})]}])
    tool = _span(trace_id, "0102030405060708", "execute_tool ledger.record_entry", t0 + 100, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ledger.record_entry",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.arguments": json.dumps({"date": "2026-08-16", "amount": 6, "currency": "CNY",
                                                  "category": "household", "merchant": "Quickmart",
                                                  "note": f"ask {PHONE}, token {CANARY}"}),
        "gen_ai.tool.call.result": json.dumps({"entry": {"id": "e9"}, "auth": f"Bearer {JWT}"}),
    }, parent="a1b2c3d4e5f60718")
    return [agent, tool]


def write_otel(path: Path) -> Path:
    """Two identical conversations (the second with a base64 trace id, as a protobuf JSON printer
    writes it) and one more request; JSON Lines, as the collector's file exporter writes."""
    tid_a = "5b8efff798038103d269b633813fc60c"
    tid_b = base64.b64encode(bytes.fromhex("0af7651916cd43dd8448eb211c80319c")).decode()
    docs = [{"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "bookkeeper")]},
                                "scopeSpans": [{"scope": {"name": "bookkeeper"}, "spans": otel_water_trace(tid)}]}]}
            for tid in (tid_a, tid_b)]
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return path


def write_assay_otel(path: Path) -> Path:
    """The shape of assay's own OTLP export: trial and tool spans with names, counts and verdicts
    only (no prompts or arguments)."""
    tid = "11112222333344445555666677778888"
    trial = _span(tid, "1111111111111111", "assay.trial", 1_790_000_000_000_000_000, {
        "assay.run_id": "r1", "assay.trial_id": "clear-dinner.base.reference.r1", "assay.task_id": "clear-dinner",
        "assay.category": "act", "assay.end_state": "fail"},
        events=[{"name": "gen_ai.evaluation.result", "timeUnixNano": "1790000000000002000",
                 "attributes": [_attr("gen_ai.evaluation.score.label", "fail")]}])
    tool = _span(tid, "2222222222222222", "execute_tool ledger.record_entry", 1_790_000_000_000_001_000,
                 {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ledger.record_entry"},
                 parent="1111111111111111", status=2)
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [trial, tool]}]}]}))
    return path


def write_langfuse(path: Path) -> Path:
    """A trace as the Langfuse UI downloads it: input messages, a TOOL observation, and a
    free-text correction score."""
    trace = {
        "id": "lf-7c1e9a", "timestamp": "2026-08-16T09:12:00.000Z", "name": "bookkeeping",
        "input": [{"role": "system", "content": "You keep the ledger."},
                  {"role": "user", "content": f"Taxi home from the airport, 88 CNY, 2026-08-15. Email {EMAIL} if unsure."}],
        "output": {"role": "assistant", "content": "Booked under transport."},
        "metadata": {"env": f"LEDGER_SYNC_TOKEN={CANARY}"},
        "observations": [
            {"id": "o1", "traceId": "lf-7c1e9a", "type": "GENERATION", "name": "chat", "startTime": "2026-08-16T09:12:00.100Z",
             "input": [{"role": "user", "content": "Taxi home from the airport, 88 CNY, 2026-08-15."}], "model": "x"},
            {"id": "o2", "traceId": "lf-7c1e9a", "type": "TOOL", "name": "ledger.record_entry",
             "startTime": "2026-08-16T09:12:00.200Z",
             "input": {"date": "2026-08-15", "amount": 88, "currency": "CNY", "category": "shopping",
                       "merchant": "City Taxi", "note": f"api_key={API_KEY}"},
             "output": {"entry": {"id": "e4"}}, "level": "DEFAULT"},
        ],
        "scores": [{"id": "s1", "traceId": "lf-7c1e9a", "name": "user_correction", "dataType": "CATEGORICAL",
                    "stringValue": "wrong", "comment": "A taxi is transport, not shopping.", "source": "ANNOTATION"}],
    }
    path.write_text(json.dumps(trace))
    return path


def assert_no_planted(root: Path) -> None:
    for f in root.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in PLANTED:
                assert s.encode() not in data, (f, s)
