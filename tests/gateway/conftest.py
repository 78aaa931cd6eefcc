"""Gateway fixtures: a real gateway server on loopback with a scripted backend and a real trace."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from assay.gateway.service import GatewayService
from assay.gateway.session import GatewaySession
from assay.records.manifest import GatewayRecord
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter, read_events

SCRIPT = {"turns": [
    {"text": "Looking.", "tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]},
    {"tool_calls": [{"name": "write", "arguments": {"path": "out.txt", "content": "ok\n"}}]},
    {"text": "Done here."},
]}
KEY = "sk-gw-test-0123456789abcdef"

OPENAI_TOOLS = [
    {"type": "function", "function": {"name": "bash", "description": "run",
                                      "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "write_file", "description": "write",
                                      "parameters": {"type": "object", "properties": {
                                          "file_path": {"type": "string"}, "content": {"type": "string"}}}}},
]
ANTHROPIC_TOOLS = [{"name": t["function"]["name"], "description": t["function"]["description"],
                    "input_schema": t["function"]["parameters"]} for t in OPENAI_TOOLS]


@dataclass
class Gateway:
    service: GatewayService
    session: GatewaySession
    trace: TraceWriter
    key: str

    @property
    def url(self) -> str:
        return self.service.server.url

    def events(self, kind: str | None = None) -> list[Any]:
        return [e for e in read_events(self.trace.path) if kind is None or e.kind == kind]


def start_gateway(tmp_path: Path, record: GatewayRecord, *, key: str = KEY, session_kwargs: dict | None = None) -> Gateway:
    svc = GatewayService(record)
    svc.start_sync()
    trace = TraceWriter(tmp_path / f"trace-{key[-6:]}.jsonl", "t.base.a.r1", redactor=Redactor({"key": key}))
    sess = svc.open_session(None, key=key)
    sess.trace = trace
    sess.redactor = trace.redactor
    for k, v in (session_kwargs or {}).items():
        setattr(sess, k, v)
    return Gateway(svc, sess, trace, key)


@pytest.fixture
def script_file(tmp_path: Path) -> Path:
    p = tmp_path / "model.yaml"
    p.write_text(yaml.safe_dump(SCRIPT))
    return p


@pytest.fixture
def gateway(tmp_path: Path, script_file: Path) -> Iterator[Gateway]:
    gw = start_gateway(tmp_path, GatewayRecord(backend="scripted", model="assay-scripted",
                                               settings={"script": str(script_file)},
                                               prices={"assay-scripted": {"input": 1.0, "output": 2.0}}))
    try:
        yield gw
    finally:
        gw.service.stop_sync()
