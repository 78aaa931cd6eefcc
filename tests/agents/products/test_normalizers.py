"""Normalizers on the real session files the four agents wrote (tests/agents/products/fixtures)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import zstandard

from assay.agents.products.dsh import session_format as dsh_format
from assay.agents.products.hermes import session_format as hermes_format
from assay.agents.products.normalized import Normalized, read_jsonl
from assay.agents.products.openclaw import session_format as openclaw_format
from assay.agents.products.pi import session_format as pi_format
from assay.trace.events import EventKind

FIX = Path(__file__).parent / "fixtures"
SHELL_CMD = "echo hello-from-agent > hello.txt && cat hello.txt"


def kinds(items: list[Normalized]) -> list[str]:
    return [i.kind.value for i in items]


def one(items: list[Normalized], kind: EventKind) -> dict:
    found = [i.data for i in items if i.kind == kind]
    assert len(found) == 1, found
    return found[0]


def assert_hello_session(items: list[Normalized], native_shell: str) -> None:
    """The shape every sample shares: call shell, get its output, answer 'Done'."""
    assert kinds(items) == ["model_response", "tool_call", "tool_result", "model_response", "final_output"]
    call = one(items, EventKind.tool_call)
    assert call["name"] == "shell" and call["native_name"] == native_shell
    assert call["arguments"] == {"command": SHELL_CMD}
    res = one(items, EventKind.tool_result)
    assert res["call_id"] == call["call_id"] and res["ok"] is True and res["name"] == "shell"
    assert "hello-from-agent" in res["output"]
    assert one(items, EventKind.final_output)["text"] == "Done: hello.txt created."
    first = items[0].data
    assert first["tool_calls"][0]["name"] == "shell"


# ----------------------------------------------------------------------------- Pi
def test_pi_session_file() -> None:
    items = pi_format.normalize_messages(
        pi_format.session_messages(read_jsonl((FIX / "pi/session.jsonl").read_text())), pi_format.PI_TOOLS)
    assert_hello_session(items, "bash")
    first, second = [i.data for i in items if i.kind == EventKind.model_response]
    assert first["usage"]["input_tokens"] == 606 and first["usage"]["output_tokens"] == 12
    assert first["cost_usd"] == pytest.approx(0.00063) and first["latency_s"] == pytest.approx(0.036)
    assert first["finish_reason"] == "toolUse" and second["usage"]["input_tokens"] == 681
    assert one(items, EventKind.tool_result)["duration_s"] == pytest.approx(0.025)
    assert all(i.ts is not None and i.ts > 1.7e9 for i in items)


def test_pi_stdout_stream_gives_the_same_events() -> None:
    from_file = pi_format.normalize_messages(
        pi_format.session_messages(read_jsonl((FIX / "pi/session.jsonl").read_text())), pi_format.PI_TOOLS)
    from_stdout = pi_format.normalize_messages(
        pi_format.stdout_messages(read_jsonl((FIX / "pi/mode-json-stdout.jsonl").read_text())), pi_format.PI_TOOLS)
    assert [(i.kind, i.data) for i in from_stdout] == [(i.kind, i.data) for i in from_file]


def test_pi_tree_drops_abandoned_branch_and_torn_lines() -> None:
    entries = read_jsonl((FIX / "pi/session.jsonl").read_text())
    user = next(e for e in entries if e.get("type") == "message" and e["message"]["role"] == "user")
    # a branch the user abandoned (forked off the user message), written before the real one
    dead = {"type": "message", "id": "dead0001", "parentId": user["id"], "timestamp": user["timestamp"],
            "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c_dead", "name": "bash",
                                                          "arguments": {"command": "rm -rf /"}}],
                        "usage": {"input": 1, "output": 1}, "stopReason": "toolUse"}}
    idx = entries.index(user) + 1
    text = "\n".join(json.dumps(e) for e in [*entries[:idx], dead, *entries[idx:]]) + '\n{"type":"mess'
    items = pi_format.normalize_messages(pi_format.session_messages(read_jsonl(text)), pi_format.PI_TOOLS)
    assert "rm -rf /" not in json.dumps([i.data for i in items])
    assert_hello_session(items, "bash")


def test_pi_error_stop_reason_and_failed_tool() -> None:
    msgs = [({"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "edit",
                                                "arguments": {"path": "a.py", "edits": [{"oldText": "x", "newText": "y"}]}}],
              "usage": {"input": 5, "output": 2}, "stopReason": "toolUse", "model": "m"}, 1.0),
            ({"role": "toolResult", "toolCallId": "c1", "toolName": "edit", "isError": True,
              "content": [{"type": "text", "text": "oldText not found"}]}, 2.0),
            ({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "HTTP 500", "usage": {}}, 3.0)]
    items = pi_format.normalize_messages(msgs, pi_format.PI_TOOLS)
    call = one(items, EventKind.tool_call)
    assert call["name"] == "edit" and call["arguments"] == {"path": "a.py", "old": "x", "new": "y"}
    assert call["native_arguments"]["edits"][0]["oldText"] == "x"
    res = one(items, EventKind.tool_result)
    assert res["ok"] is False and res["error"] == "oldText not found"
    err = one(items, EventKind.error)
    assert err["message"] == "HTTP 500" and err["reason"] == "agent_error"
    assert EventKind.final_output not in [i.kind for i in items]


# ----------------------------------------------------------------------------- OpenClaw
def make_openclaw_db(path: Path, *, compress: bool) -> Path:
    """A database with OpenClaw's table layout, filled with the sample's rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, event_zstd BLOB)")
    db.execute("CREATE TABLE trajectory_runtime_events (session_id TEXT, seq INTEGER, run_id TEXT, event_json TEXT)")
    transcript = read_jsonl((FIX / "openclaw/transcript_events.jsonl").read_text())
    sid = transcript[0]["id"]
    # an older session in the same database must not leak into this one
    db.execute("INSERT INTO transcript_events VALUES ('older', 0, ?, NULL)", (json.dumps({"type": "session"}),))
    for seq, e in enumerate(transcript):
        raw = json.dumps(e)
        if compress:
            db.execute("INSERT INTO transcript_events VALUES (?, ?, NULL, ?)",
                       (sid, seq, zstandard.ZstdCompressor().compress(raw.encode())))
        else:
            db.execute("INSERT INTO transcript_events VALUES (?, ?, ?, NULL)", (sid, seq, raw))
    for e in read_jsonl((FIX / "openclaw/trajectory_runtime_events.jsonl").read_text()):
        db.execute("INSERT INTO trajectory_runtime_events VALUES (?, ?, ?, ?)", (sid, e["seq"], e["runId"], json.dumps(e)))
    db.commit()
    db.close()
    return path


def test_openclaw_sample_rows() -> None:
    items = openclaw_format.normalize(read_jsonl((FIX / "openclaw/transcript_events.jsonl").read_text()),
                                      read_jsonl((FIX / "openclaw/trajectory_runtime_events.jsonl").read_text()))
    assert_hello_session(items, "exec")
    res = one(items, EventKind.tool_result)
    assert res["exit_code"] == 0 and res["duration_s"] == pytest.approx(0.479)
    usage = [i.data["usage"]["input_tokens"] for i in items if i.kind == EventKind.model_response]
    assert usage == [6703, 6777]  # the envelope's total is their sum
    envelope = json.loads((FIX / "openclaw/agent-exec-envelope.json").read_text())
    assert sum(usage) == envelope["usage"]["input"]


@pytest.mark.parametrize("compress", [False, True])
def test_openclaw_sqlite_store(tmp_path: Path, compress: bool) -> None:
    db = make_openclaw_db(tmp_path / "state/agents/main/agent/openclaw-agent.sqlite", compress=compress)
    assert openclaw_format.find_databases(tmp_path / "state") == [db]
    transcript, runtime = openclaw_format.read_database(db)
    assert transcript[0]["type"] == "session" and transcript[0]["version"] == 4
    assert [e["type"] for e in runtime][-1] == "session.ended"
    assert_hello_session(openclaw_format.normalize(transcript, runtime), "exec")


def test_openclaw_failed_session_is_an_error_event() -> None:
    runtime = [{"type": "session.ended", "ts": "2026-11-29T23:59:51.124Z",
                "data": {"status": "error", "timedOut": True, "stopReason": "timeout"}}]
    items = openclaw_format.normalize([], runtime)
    err = one(items, EventKind.error)
    assert "timedOut" in err["message"] and err["stop_reason"] == "timeout"


# ----------------------------------------------------------------------------- Hermes
def make_state_db(path: Path, session: dict) -> Path:
    """A state.db with Hermes' sessions/messages tables holding the exported session."""
    db = sqlite3.connect(path)
    srow = {k: v for k, v in session.items() if k != "messages"}
    db.execute(f"CREATE TABLE sessions ({', '.join(srow)})")
    db.execute(f"INSERT INTO sessions VALUES ({', '.join('?' * len(srow))})", list(srow.values()))
    cols = list(session["messages"][0])
    db.execute(f"CREATE TABLE messages ({', '.join(cols)})")
    for m in session["messages"]:
        vals = [json.dumps(m[c]) if isinstance(m[c], (list, dict)) else m[c] for c in cols]
        db.execute(f"INSERT INTO messages VALUES ({', '.join('?' * len(cols))})", vals)
    db.commit()
    db.close()
    return path


def test_hermes_export() -> None:
    session = read_jsonl((FIX / "hermes/sessions-export.jsonl").read_text())[0]
    items = hermes_format.normalize(session)
    assert_hello_session(items, "terminal")
    calls = [i.data for i in items if i.kind == EventKind.model_response]
    # tokens are per session: the sum over the trace equals Hermes' own usage file
    usage = json.loads((FIX / "hermes/usage.json").read_text())
    assert sum(c["usage"]["input_tokens"] for c in calls) == usage["input_tokens"] == 3517
    assert sum(c["usage"]["output_tokens"] for c in calls) == usage["output_tokens"]
    assert calls[-1]["usage_scope"] == "session_total" and calls[0]["usage_scope"] == "not_reported"
    res = one(items, EventKind.tool_result)
    assert res["exit_code"] == 0 and 0 < res["duration_s"] < 1


def test_hermes_state_db_reads_like_the_export(tmp_path: Path) -> None:
    session = read_jsonl((FIX / "hermes/sessions-export.jsonl").read_text())[0]
    db = make_state_db(tmp_path / "state.db", session)
    [read] = hermes_format.read_state_db(db)
    assert [(i.kind, i.data) for i in hermes_format.normalize(read)] == \
        [(i.kind, i.data) for i in hermes_format.normalize(session)]


def test_hermes_failed_command_and_bad_json() -> None:
    session = {"model": "m", "input_tokens": 10, "output_tokens": 1, "end_reason": "max_iterations", "messages": [
        {"role": "assistant", "content": "", "timestamp": 1.0, "tool_calls": json.dumps([
            {"id": "c1", "function": {"name": "terminal", "arguments": "{not json"}}])},
        {"role": "tool", "tool_call_id": "c1", "tool_name": "terminal", "timestamp": 3.5,
         "content": json.dumps({"output": "", "exit_code": 2, "error": "boom"})}]}
    items = hermes_format.normalize(session)
    call = one(items, EventKind.tool_call)
    assert call["arguments"] == "{not json"  # kept as given, never guessed
    res = one(items, EventKind.tool_result)
    assert res["ok"] is False and res["exit_code"] == 2 and res["error"] == "boom" and res["duration_s"] == 2.5
    assert "max_iterations" in one(items, EventKind.error)["message"]


# ----------------------------------------------------------------------------- DSH
def test_dsh_session_log() -> None:
    items = dsh_format.normalize_session(dsh_format.read_session_log(FIX / "dsh/session.v4.jsonl"))
    assert_hello_session(items, "bash")
    calls = [i.data for i in items if i.kind == EventKind.model_response]
    assert [c["usage"]["input_tokens"] for c in calls] == [161, 256]
    assert calls[0]["model"] == "deepseek-flash"
    res = one(items, EventKind.tool_result)
    assert res["exit_code"] == 0 and res["duration_s"] == pytest.approx(0.076, abs=1e-3)
    # the description DSH's bash requires is not part of the neutral call, but is kept
    assert json.loads(one(items, EventKind.tool_call)["native_arguments"])["description"] == "Create hello.txt"


def test_dsh_zstd_log_in_several_frames_with_torn_tail(tmp_path: Path) -> None:
    raw = (FIX / "dsh/session.v4.jsonl").read_bytes()
    half = raw.index(b"\n", len(raw) // 2) + 1
    c = zstandard.ZstdCompressor()
    torn = c.compress(b'{"type":"step/start","seq":99')[:-6]
    p = tmp_path / "sessions/--ws--/s1/session.v4.jsonl.zstd"
    p.parent.mkdir(parents=True)
    p.write_bytes(c.compress(raw[:half]) + c.compress(raw[half:]) + torn)
    assert dsh_format.find_session_logs(tmp_path) == [p]
    events = dsh_format.read_session_log(p)
    assert len(events) == raw.count(b"\n")
    assert_hello_session(dsh_format.normalize_session(events), "bash")


def test_dsh_stdout_fallback_and_error_turn() -> None:
    items = dsh_format.normalize_stdout(read_jsonl((FIX / "dsh/headless-json-stdout.jsonl").read_text()))
    assert [i.data["usage"]["input_tokens"] for i in items if i.kind == EventKind.model_response] == [161, 256]
    assert one(items, EventKind.tool_call)["arguments"] == {"command": SHELL_CMD}
    assert one(items, EventKind.final_output)["text"] == "Done: hello.txt created."
    bad = dsh_format.normalize_session([{"type": "turn/end", "seq": 1, "time": 1795996890508,
                                         "data": {"turn": 1, "reason": {"kind": "max-tokens"}}}])
    assert "max-tokens" in one(bad, EventKind.error)["message"]
