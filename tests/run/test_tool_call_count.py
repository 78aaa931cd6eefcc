"""The result's tool-call count is the harness's record, as every predicate counts calls: an
agent that kept no session (or deleted it) made the calls its model asked for all the same, and an
efficiency figure of zero calls was its own word against the gateway's record."""

from __future__ import annotations

from pathlib import Path

from assay.run import RunOptions, start_run
from assay.worlds.call_record import call_record
from assay.worlds.calls import counted_calls
from assay.trace.writer import read_events
from tests.score.test_screen_blind_spots import _suite, run_silent


def test_calls_the_agent_kept_no_record_of_are_counted_from_the_gateways_record(tmp_path: Path) -> None:
    out, res = run_silent(tmp_path)
    assert res.usage.model_calls == 1 and "agent_log_incomplete" in {i.type for i in res.incidents}, res
    assert res.usage.tool_calls == 1
    events = list(read_events(out / "trials" / res.trial_id / "trace.jsonl"))
    assert res.usage.tool_calls == len(counted_calls(call_record(events).calls))  # what max_calls judges


def test_a_complete_session_counts_each_call_once(tmp_path: Path) -> None:
    out = tmp_path / "r"
    [res] = start_run(RunOptions(suite=_suite(tmp_path / "s", {"turns": [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo 4 > a.txt"}},
                        {"name": "shell", "arguments": {"command": "echo 42 > answer.txt"}}]},
        {"text": "Done."}]}), agents=["reference"], out=out, sandbox="host", model="scripted", max_retries=0)).results
    assert res.end_state.value == "pass" and res.usage.tool_calls == 2, res
    assert not res.incidents
