"""The products' session stores are written by the agent: an attacker plants them. Reading them
back must stay bounded in time and memory inside the harness process, which has no sandbox
around it: a SQLite file whose schema runs an endless query, a generated column that builds
gigabyte strings, a zstd frame that inflates to gigabytes, JSON nested past the recursion limit.

Each read runs in a child process with an address-space limit and a deadline, so the old code
failing (a hang, a MemoryError) fails the test instead of the machine."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

AS_LIMIT = 1536 << 20  # the child's address space: a gigabyte-sized allocation fails there
DEADLINE_S = 60  # a guard against a hang, not a synchronisation: the bounded reads end in seconds

CHILD = r"""
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from pathlib import Path
home = Path(sys.argv[1])
try:
    out = ({call})
    print(json.dumps({{"kind": "returned", "size": len(json.dumps(out, default=str))}}))
except BaseException as e:
    from assay.untrusted.files import Unsafe
    print(json.dumps({{"kind": "raised", "type": type(e).__name__, "unsafe": isinstance(e, Unsafe), "msg": str(e)[:300]}}))
"""


def _read_in_child(call: str, home: Path) -> dict:
    code = CHILD.format(limit=AS_LIMIT, call=call)
    try:
        done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True,
                              timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading the planted store did not end within {DEADLINE_S} s: {call}")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _zstd_bomb(size: int) -> bytes:
    """A frame of ``size`` zero bytes: a few hundred kilobytes that inflate ``size``-fold less."""
    comp = zstandard.ZstdCompressor(level=3).compressobj()
    chunk = bytes(1 << 20)
    parts = [comp.compress(chunk) for _ in range(size >> 20)]
    parts.append(comp.flush())
    return b"".join(parts)


def _hermes_db(path: Path, sessions_sql: str, messages_sql: str = "CREATE TABLE messages(id, session_id, role, "
                                                                 "content, tool_calls, timestamp)") -> None:
    db = sqlite3.connect(path)
    db.executescript(f"{sessions_sql};\n{messages_sql};")
    db.commit()
    db.close()


def test_a_hermes_store_whose_sessions_view_never_ends_is_refused(tmp_path: Path) -> None:
    _hermes_db(tmp_path / "state.db", "CREATE VIEW sessions AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
                                      "SELECT x + 1 FROM n) SELECT x AS id, x AS started_at FROM n")
    out = _read_in_child("__import__('assay.agents.products.hermes.session_format', fromlist=['x'])"
                         ".read_state_db(home / 'state.db', home=home)", tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out
    assert "sessions" in out["msg"]


def test_a_hermes_store_with_a_generated_gigabyte_column_is_refused(tmp_path: Path) -> None:
    _hermes_db(tmp_path / "state.db", "CREATE TABLE sessions(id, started_at, pad GENERATED ALWAYS AS "
                                      "(printf('%.*c', 9, 'x')) VIRTUAL)")
    db = sqlite3.connect(tmp_path / "state.db")
    db.executemany("INSERT INTO sessions(id, started_at) VALUES (?, ?)", [(f"s{i}", i) for i in range(8)])
    db.commit()
    # the gigabyte expression goes into the schema after the rows: SQLite computes the column on
    # every insert too (90 s of this test's own CPU for 8 rows), and the planted file is the same
    db.execute("PRAGMA writable_schema = ON")
    db.execute("UPDATE sqlite_master SET sql = replace(sql, ', 9,', ', 900000000,') WHERE name = 'sessions'")
    db.commit()
    db.close()
    db = sqlite3.connect(tmp_path / "state.db")
    [(schema,)] = db.execute("SELECT sql FROM sqlite_master WHERE name = 'sessions'").fetchall()
    db.close()
    assert "900000000" in schema
    out = _read_in_child("__import__('assay.agents.products.hermes.session_format', fromlist=['x'])"
                         ".read_state_db(home / 'state.db', home=home)", tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out


def test_an_honest_hermes_store_with_many_sessions_is_read_whole(tmp_path: Path) -> None:
    """The bounds do not cut an honest store: 20,000 sessions with a message each are read in one
    pass (the old reader scanned every message once per session)."""
    _hermes_db(tmp_path / "state.db", "CREATE TABLE sessions(id, started_at)")
    db = sqlite3.connect(tmp_path / "state.db")
    db.execute("INSERT INTO sessions WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 20000) "
               "SELECT 's' || x, x FROM n")
    db.execute("INSERT INTO messages(id, session_id, role, content) WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL "
               "SELECT x + 1 FROM n LIMIT 20000) SELECT x, 's' || x, 'user', 'hi' FROM n")
    db.commit()
    db.close()
    out = _read_in_child("__import__('assay.agents.products.hermes.session_format', fromlist=['x'])"
                         ".read_state_db(home / 'state.db', home=home)", tmp_path)
    assert out["kind"] == "returned" and out["size"] > 20_000 * 40, out


OPENCLAW_DB = "agents/main/agent/openclaw-agent.sqlite"


def _openclaw_db(home: Path) -> sqlite3.Connection:
    (home / OPENCLAW_DB).parent.mkdir(parents=True)
    return sqlite3.connect(home / OPENCLAW_DB)


def _read_openclaw_in_child(home: Path) -> dict:
    return _read_in_child("__import__('assay.agents.products.openclaw.session_format', fromlist=['x'])"
                          f".read_database(home / {OPENCLAW_DB!r}, home=home)", home)


def test_an_openclaw_row_that_inflates_to_gigabytes_is_refused(tmp_path: Path) -> None:
    db = _openclaw_db(tmp_path)
    db.execute("CREATE TABLE transcript_events(session_id, seq, event_json, event_zstd)")
    db.execute("INSERT INTO transcript_events VALUES ('s', 1, NULL, ?)", (_zstd_bomb(2 << 30),))
    db.commit()
    db.close()
    out = _read_openclaw_in_child(tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out


def test_many_small_openclaw_rows_cannot_add_up_past_the_bound(tmp_path: Path) -> None:
    """Each row alone stays under any per-row bound; together they would fill the harness's memory."""
    line = json.dumps({"type": "message", "message": {"role": "user", "content": "x" * (8 << 20)}}).encode()
    packed = zstandard.ZstdCompressor(level=3).compress(line)
    db = _openclaw_db(tmp_path)
    db.execute("CREATE TABLE transcript_events(session_id, seq, event_json, event_zstd)")
    db.executemany("INSERT INTO transcript_events VALUES ('s', ?, NULL, ?)", [(i, packed) for i in range(400)])
    db.commit()
    db.close()
    out = _read_openclaw_in_child(tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out


def test_an_openclaw_transcript_that_is_a_view_is_refused(tmp_path: Path) -> None:
    db = _openclaw_db(tmp_path)
    db.execute("CREATE VIEW transcript_events AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
               "SELECT 's' AS session_id, x AS seq, '{}' AS event_json, NULL AS event_zstd FROM n")
    db.commit()
    db.close()
    out = _read_openclaw_in_child(tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out


def test_a_dsh_session_log_that_inflates_to_gigabytes_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "sessions" / "--w--" / "s1" / "session.v4.jsonl.zstd"
    log.parent.mkdir(parents=True)
    log.write_bytes(_zstd_bomb(2 << 30))
    out = _read_in_child("__import__('assay.agents.products.dsh.session_format', fromlist=['x'])"
                         ".read_session_log(home / 'sessions/--w--/s1/session.v4.jsonl.zstd', home=home)", tmp_path)
    assert out["kind"] == "raised" and out["unsafe"], out


def test_json_nested_past_the_recursion_limit_is_a_torn_line_not_a_crash() -> None:
    from assay.agents.products.normalized import read_jsonl

    text = "[" * 200_000 + "\n" + json.dumps({"type": "ok"}) + "\n"
    assert read_jsonl(text) == [{"type": "ok"}]


HOSTILE_NUMBERS = [float("nan"), float("inf"), -float("inf"), -5, -0.5, "abc", "\u0661\u0662", 10**40, 1e300, True,
                   [1], {"n": 1}]


@pytest.mark.parametrize("value", HOSTILE_NUMBERS, ids=repr)
@pytest.mark.parametrize("field", ["input", "output", "cacheRead", "cost", "durationMs"])
def test_a_session_that_claims_impossible_usage_never_makes_an_unreadable_result(field: str, value: object) -> None:
    """Where the gateway counted no call, an attempt's usage is the agent's own session's: numbers
    the agent wrote. JSON as Python reads it takes ``NaN`` and ``Infinity``: a NaN cost was written
    into the result as null, which no reader accepts (the whole run then failed its check), an
    infinite token count ended the session's reading (its trace lost). A value that is no count or
    amount (not finite, negative, not a number, past any real count) is counted as nothing; the
    honest message beside it still counts, and the result reads back as written."""
    from assay.agents.products.common import usage_of
    from assay.agents.products.normalized import read_jsonl
    from assay.agents.products.pi.session_format import PI_TOOLS, normalize_messages, session_messages
    from assay.store.fastread import decode_result, parse_with_pydantic
    from tests.score.synth import attempt

    def message(usage: dict, duration: object = 1000, n: int = 1) -> str:
        return json.dumps({"type": "message", "id": f"m{n}", "parentId": f"m{n - 1}" if n > 1 else None,
                           "timestamp": "2026-01-01T00:00:00Z", "message": {
            "role": "assistant", "model": "m", "content": [{"type": "text", "text": "hi"}], "usage": usage,
            "stopReason": "stop", "durationMs": duration}})

    honest = {"input": 100, "output": 20, "cacheRead": 3, "cost": {"total": 0.01}}
    hostile = {"input": 1, "output": 1, "cacheRead": 0, "cost": {"total": 0.0}}
    duration: object = 1000
    if field == "cost":
        hostile["cost"] = {"total": value}
    elif field == "durationMs":
        duration = value
    else:
        hostile[field] = value
    text = "\n".join([message(hostile, duration), message(honest, n=2)])  # json.dumps writes NaN and Infinity
    items = normalize_messages(session_messages(read_jsonl(text)), PI_TOOLS)
    usage = usage_of(items)
    assert usage is not None and usage.model_calls == 2
    own = {"input": 100 + (hostile["input"] if field != "input" else 0),
           "output": 20 + (hostile["output"] if field != "output" else 0)}
    assert (usage.input_tokens, usage.output_tokens) == (own["input"], own["output"]), usage
    assert usage.cost_usd == pytest.approx(0.01) and usage.cached_tokens == 3, usage
    for ev in items:  # what the trace records of it: finite numbers only
        for key in ("latency_s", "cost_usd"):
            if key in ev.data:
                assert ev.data[key] == ev.data[key] and abs(ev.data[key]) != float("inf"), ev.data
    result = attempt("t", "code", "a", 1, "fail").model_copy(update={"usage": usage})
    raw = result.model_dump_json().encode()
    assert decode_result(raw, "result.json").usage.cost_usd == usage.cost_usd
    assert parse_with_pydantic(raw, Path("result.json")).usage == usage


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 10**400, -1e300])
def test_a_timestamp_that_is_no_time_is_none_and_a_duration_that_is_no_amount_is_dropped(value: object) -> None:
    """A timestamp the engine would have written as null (NaN, an infinity) or could not convert
    (an int past a float: OverflowError, the session's reading lost) is no time: the engine's clock
    is used. A tool's duration that is no amount is not recorded."""
    from assay.agents.products.normalized import ToolNames, iso_ts, tool_result

    assert iso_ts(value) is None
    assert iso_ts(1_700_000_000_000) == 1_700_000_000.0 and iso_ts(1_700_000_000) == 1_700_000_000.0
    ev = tool_result(ToolNames({}, {}), "c1", "bash", "out", ok=True, ts=None, duration_s=value)  # type: ignore[arg-type]
    assert ev.data["duration_s"] is None


@pytest.mark.parametrize("stamp", ["abc", float("inf"), float("nan"), [1], {"t": 1}, 10**400, "2026-01-01T00:00:00Z"])
def test_a_session_timestamp_that_is_no_time_never_stops_the_engine_recording_the_trace(tmp_path: Path,
                                                                                        stamp: object) -> None:
    """Hermes' rows carry their own timestamps, handed to the engine as the events' times. A text one
    failed the trace event's validation inside the engine (the teardown kept none of the evidence
    after it: the workspace's final state lost); an infinite one was written as null, a trace line no reader
    takes. Every event is recorded, at the session's time where it is one and the engine's
    otherwise, and the trace reads back whole."""
    from assay.agents.products.hermes.session_format import normalize
    from assay.run.attempt.phases import emit_agent_events
    from assay.trace.redact import Redactor
    from assay.trace.writer import TraceWriter, read_events

    session = {"started_at": 1_700_000_000.0, "input_tokens": 5, "output_tokens": 2, "messages": [
        {"role": "assistant", "content": "", "timestamp": stamp,
         "tool_calls": [{"id": "c1", "function": {"name": "terminal", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "timestamp": stamp},
        {"role": "assistant", "content": "done", "timestamp": 1_700_000_005.0}]}
    events = normalize(session)
    trace = TraceWriter(tmp_path / "trace.jsonl", "t.base.a.r1", redactor=Redactor({}))
    emit_agent_events(trace, events)
    back = read_events(tmp_path / "trace.jsonl")
    assert len(back) == len(events) >= 4
    assert all(isinstance(e.ts, float) and e.ts == e.ts and abs(e.ts) != float("inf") for e in back)
