"""The reference agent's session log lives in its home, where the model's own shell commands can
write: records with the wrong types (a usage count that is a word, a call id that is a list, a
final answer that is an object) must cost the attempt its session trace at most, never turn its
verdict into the harness's crash. A call forged into the log is evidence against the agent."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.gateway.test_run_e2e import make_suite, run

FORGED = [
    {"type": "model_response", "usage": {"prompt_tokens": "many", "completion_tokens": [1]}},
    {"type": "model_response", "usage": ["not", "a", "mapping"]},
    {"type": "tool_call", "call_id": [1, 2], "name": {"x": 1}, "arguments": "not a mapping"},
    {"type": "tool_result", "call_id": {"a": 1}, "world_tool": "ledger.x", "ok": "yes"},
    {"type": "final", "text": {"forged": True}},
    {"type": "stop", "reason": ["turns"], "detail": {"x": 1}},
]
#: well-typed records holding lone surrogates: one such line crashed the whole run (no result)
#: when the trace was written
SURROGATES = [
    {"type": "tool_call", "call_id": "zz", "name": "shell", "arguments": {"command": "\udcff"}},
    {"type": "retry", "reason": "\ud800", "attempt": 1},
    {"type": "tool_result", "call_id": "zz\udcff", "name": "shell\ud800", "ok": True, "output": ["\ud800"]},
]


@pytest.mark.parametrize("forged", [FORGED, SURROGATES], ids=["mistyped", "surrogates"])
@pytest.mark.parametrize("solve", [True, False])
def test_forged_session_records_keep_the_verdict(tmp_path: Path, solve: bool, forged: list) -> None:
    records = " ".join(shlex.quote(json.dumps(r)) for r in forged)
    append = f"printf '%s\\n' {records} >> \"$HOME/reference-session.jsonl\""
    fix = [{"name": "edit", "arguments": {"path": "calc.py", "old": "a - b", "new": "a + b"}}] if solve else []
    script = {"turns": [{"tool_calls": [*fix, {"name": "shell", "arguments": {"command": append}}]},
                        {"text": "Done."}]}
    out = run(make_suite(tmp_path / "s", script=script), tmp_path / "r", sandbox="bwrap")
    [r] = out.results
    if forged is SURROGATES:  # a call the gateway never carried is forged into the log: evidence against the agent
        assert (r.end_state.value, r.reason) == ("fail", "tampering"), (r.end_state, r.reason, r.errors)
        assert any(i.type == "agent_log_forged" for i in r.incidents)
        return
    assert r.end_state.value == ("pass" if solve else "fail"), (r.end_state, r.reason, r.errors)
    assert r.agent_claim is None or isinstance(r.agent_claim, str)
