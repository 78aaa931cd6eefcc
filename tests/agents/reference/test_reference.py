"""The reference agent's loop, run as a real subprocess against a real gateway (and a real tools server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from assay.agents.reference.adapter import ReferenceAgent, read_session
from assay.agents.reference.tools import function_name, run_builtin
from assay.gateway.faults import FaultPlan
from assay.gateway.server import ServerThread
from assay.records.manifest import GatewayRecord
from assay.spec.faults import FaultKind, FaultSpec
from assay.spec.load import load_task
from tests.conftest import write_suite, write_task
from tests.gateway.conftest import Gateway, start_gateway


@pytest.fixture
def gw(tmp_path: Path):
    def make(turns: list[dict[str, Any]]) -> Gateway:
        script = tmp_path / "model.yaml"
        script.write_text(yaml.safe_dump({"turns": turns}))
        g = start_gateway(tmp_path, GatewayRecord(backend="scripted", settings={"script": str(script)}))
        made.append(g)
        return g

    made: list[Gateway] = []
    yield make
    for g in made:
        g.service.stop_sync()


def run_loop(tmp_path: Path, g: Gateway, *, key: str | None = None, env: dict[str, str] | None = None,
             **cfg: Any) -> tuple[int, list[dict[str, Any]], Path]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (tmp_path / "prompt.md").write_text("do it")
    config = {"gateway_url": g.url, "model": "m", "tools": ["shell", "read", "write", "edit", "list"],
              "prompt_file": str(tmp_path / "prompt.md"), "session_file": str(tmp_path / "session.jsonl"),
              "retry_base_s": 0.01, "retry_max_s": 0.05, **cfg}
    (tmp_path / "cfg.json").write_text(json.dumps(config))
    p = subprocess.run([sys.executable, "-m", "assay.agents.reference.loop", str(tmp_path / "cfg.json")], cwd=ws,
                       env={"PATH": "/usr/bin:/bin", "ASSAY_GATEWAY_KEY": key or g.key, **(env or {})},
                       capture_output=True, timeout=120)
    return p.returncode, read_session(tmp_path / "session.jsonl"), ws


def test_tools_do_real_work(tmp_path: Path, gw) -> None:
    g = gw([{"tool_calls": [{"name": "write", "arguments": {"path": "d/a.txt", "content": "x = 1\n"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "d/a.txt", "old": "x = 1", "new": "x = 2"}},
                            {"name": "edit", "arguments": {"path": "d/a.txt", "old": "missing", "new": "y"}}]},
            {"tool_calls": [{"name": "list", "arguments": {"path": "d"}}, {"name": "read", "arguments": {"path": "d/a.txt"}},
                            {"name": "shell", "arguments": {"command": "exit 3"}}]},
            {"text": "All done."}])
    code, recs, ws = run_loop(tmp_path, g)
    assert code == 0 and (ws / "d" / "a.txt").read_text() == "x = 2\n"
    results = [r for r in recs if r["type"] == "tool_result"]
    assert [r["ok"] for r in results] == [True, True, False, True, True, False]
    assert results[2]["error"] == "old text not found" and results[3]["output"] == "a.txt"
    assert results[4]["output"] == "x = 2\n" and results[5]["exit_code"] == 3
    assert recs[-1] == {**recs[-1], "type": "final", "text": "All done."}


def test_client_timeout_is_retried(tmp_path: Path, gw) -> None:
    g = gw([{"text": "ok"}])
    g.session.faults = FaultPlan([FaultSpec(kind=FaultKind.timeout, on_call=1, delay_s=5)])
    code, recs, _ = run_loop(tmp_path, g, request_timeout_s=0.3)
    assert code == 0
    assert [r["reason"] for r in recs if r["type"] == "retry"] == ["timeout"]


def test_non_transient_error_is_not_retried(tmp_path: Path, gw) -> None:
    g = gw([{"text": "ok"}])
    code, recs, _ = run_loop(tmp_path, g, key="sk-wrong-key-0000000000")
    assert code == 3 and not [r for r in recs if r["type"] == "retry"]
    assert recs[-1]["type"] == "stop" and "http_401" in recs[-1]["detail"]


def test_retries_are_bounded(tmp_path: Path, gw) -> None:
    g = gw([{"text": "ok"}])
    g.session.faults = FaultPlan([FaultSpec(kind=FaultKind.server_error, on_call=1, times=50)])
    code, recs, _ = run_loop(tmp_path, g, max_retries=2)
    assert code == 3 and len([r for r in recs if r["type"] == "retry"]) == 2
    assert "gave up after 2 retries" in recs[-1]["detail"]


def test_turn_and_tool_call_budgets_stop_the_loop(tmp_path: Path, gw) -> None:
    g = gw([{"tool_calls": [{"name": "shell", "arguments": {"command": "true"}}]}] * 5)
    code, recs, _ = run_loop(tmp_path, g, max_turns=2)
    assert code == 4 and recs[-1]["reason"] == "turns"
    assert len([r for r in recs if r["type"] == "model_response"]) == 2
    (tmp_path / "b").mkdir()
    code, recs, _ = run_loop(tmp_path / "b", g, max_tool_calls=1)
    assert code == 4 and recs[-1]["reason"] == "tool_calls"


def test_world_tools_are_discovered_and_called(tmp_path: Path, gw) -> None:
    calls: list[dict[str, Any]] = []

    async def app(scope, receive, send):  # a minimal tools service (shared contract 3) on loopback
        if scope["type"] != "http":
            return
        body = b""
        while True:
            msg = await receive()
            body += msg.get("body", b"")
            if not msg.get("more_body"):
                break
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        if auth != "Bearer world-key-123456":
            out, status = {"error": "unauthorized"}, 401
        elif scope["path"] == "/tools":
            out, status = [{"name": "ledger.record_entry", "description": "record",
                            "input_schema": {"type": "object", "properties": {"amount": {"type": "number"}}}}], 200
        else:
            calls.append(json.loads(body))
            out, status = {"ok": True, "result": {"id": 7}, "error": None}, 200
        data = json.dumps(out).encode()
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": data})

    tools = ServerThread(app)
    tools.start()
    try:
        g = gw([{"tool_calls": [{"name": "ledger.record_entry", "arguments": {"amount": 12.5}}]}, {"text": "Recorded."}])
        code, recs, _ = run_loop(tmp_path, g, tools=["shell", "ledger.record_entry"],
                                 env={"ASSAY_TOOLS_URL": tools.url, "ASSAY_TOOLS_KEY": "world-key-123456"})
    finally:
        tools.stop()
    assert code == 0 and calls == [{"name": "ledger.record_entry", "arguments": {"amount": 12.5}}]
    start = next(r for r in recs if r["type"] == "start")
    assert start["tools"] == ["shell", function_name("ledger.record_entry")]
    result = next(r for r in recs if r["type"] == "tool_result")
    assert result["ok"] and json.loads(result["output"]) == {"id": 7}


def test_shell_timeout_and_truncation() -> None:
    r = run_builtin("shell", {"command": "sleep 5"}, timeout_s=0.2)
    assert not r["ok"] and "timed out" in r["error"]
    r = run_builtin("shell", {"command": "head -c 50000 /dev/zero | tr '\\0' x"})
    assert r["ok"] and r["truncated"] and len(r["output"]) == 16_000


def test_adapter_contract(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    d = write_task(s, "t", task={"category": "code", "tools": ["shell", "teleport"],
                                 "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}]})
    agent = ReferenceAgent({})
    assert agent.needs_gateway and agent.info().usable
    assert "teleport" in (agent.unsupported_reason(load_task(d)) or "")
