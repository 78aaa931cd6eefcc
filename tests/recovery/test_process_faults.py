"""Process faults end to end (docs/recovery.md): the agent killed after a tool call, the sandbox
restarted, a late approval. A probe agent prints what its second run finds (the /tmp of the
sandbox, its home, what the first run got), the worlds and the approval store are read as they
are on disk, and the recovery figures count the restarts."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from assay.run import RunOptions, start_run
from assay.score.recovery_run import recovery_of_run
from tests.recovery.command_agents import BOOK, command_agent
from tests.recovery.test_recovery_e2e import _final_results

SUITE = Path(__file__).resolve().parents[2] / "examples" / "recovery"

PROBE = command_agent("probe", """\
import json, os, pathlib, urllib.request
HOME = pathlib.Path(__file__).resolve().parent
runs = HOME / "runs"
n = (len(runs.read_text().splitlines()) if runs.exists() else 0) + 1
with runs.open("a") as f:
    f.write("run\\n")
tmp = pathlib.Path("/tmp/probe-marker")
print("run %d: tmp %s, first run answered %s" % (n, "kept" if tmp.exists() else "gone",
                                                  (HOME / "answered").exists()), flush=True)
tmp.write_text("x")
""" + BOOK + """
try:
    answer = book()
except Exception as e:
    answer = {"ok": False, "error": type(e).__name__}
(HOME / "answered").write_text(json.dumps(answer))
print("run %d: answer ok=%s replayed=%s" % (n, answer.get("ok"), (answer.get("result") or {}).get("replayed")))
""")


def _events(run: Path, trial: str) -> list[dict]:
    return [json.loads(line) for line in (run / "trials" / trial / "trace.jsonl").read_text().splitlines()]


def _stdout(run: Path, trial: str) -> str:
    outs = [e["data"]["stdout_tail"] for e in _events(run, trial) if e["kind"] == "process_output"]
    assert len(outs) == 1  # the outcome of the last run only: the killed one left no outcome
    return outs[0]


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("process")
    agent = root / "probe.yaml"
    agent.write_text(PROBE)
    run = root / "run"
    start_run(RunOptions(suite=SUITE, out=run, agents=[str(agent)], tasks=["book-entry"]))
    return run


@pytest.mark.slow
def test_agent_killed_after_its_write_restarts_in_the_same_sandbox(probe_run):
    trial = "book-entry.fault-agent-killed.probe.r1"
    r = _final_results(probe_run)[trial]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
    out = _stdout(probe_run, trial)
    # the second run: same sandbox (/tmp kept), same home, and the first run never got its answer
    assert "run 2: tmp kept, first run answered False" in out
    assert "run 2: answer ok=True replayed=True" in out  # the write had happened: the retry is a replay
    (fault,) = r["extra"]["process_faults"]
    assert (fault["kind"], fault["restart"], fault["applied"], fault["executed"]) == ("agent_killed", "fresh", True, True)
    assert r["extra"]["duplicate_side_effects"] == 0
    kinds = [(e["source"], e["kind"]) for e in _events(probe_run, trial)]
    first_result = kinds.index(("world", "tool_result"))
    assert kinds[first_result + 1] == ("world", "fault_injected")  # after the call ran, before anything else
    assert sum(1 for k in kinds if k == ("harness", "user_message")) == 2  # the prompt, then the restart's


@pytest.mark.slow
def test_sandbox_restart_keeps_workspace_and_home_but_not_tmp(probe_run):
    trial = "book-entry.fault-sandbox-restart.probe.r1"
    r = _final_results(probe_run)[trial]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
    assert "run 2: tmp gone, first run answered False" in _stdout(probe_run, trial)
    (fault,) = r["extra"]["process_faults"]
    assert (fault["kind"], fault["restart"], fault["applied"]) == ("sandbox_restart", "fresh", True)


@pytest.mark.slow
def test_no_fault_in_base_and_figures_count_restarts(probe_run):
    final = _final_results(probe_run)
    assert "process_faults" not in final["book-entry.base.probe.r1"]["extra"]
    assert "run 1: answer ok=True" in _stdout(probe_run, "book-entry.base.probe.r1")
    fig = recovery_of_run(probe_run)
    assert fig.row("probe", "agent_killed").restarts == 1 and fig.row("probe", "sandbox_restart").restarts == 1
    assert fig.row("probe", "agent_killed").recovered == 1


@pytest.mark.slow
def test_late_approval_is_joined_not_asked_twice(tmp_path):
    run = tmp_path / "run"
    start_run(RunOptions(suite=SUITE, out=run, agents=[str(SUITE / "agents" / "careful.yaml")],
                         tasks=["approve-entry"]))
    trial = "approve-entry.fault-late-approval.careful.r1"
    r = _final_results(run)[trial]
    assert r["end_state"] == "pass", (r["reason"], r["errors"])
    (fault,) = r["extra"]["process_faults"]
    assert (fault["kind"], fault["restart"], fault["applied"]) == ("late_approval", "fresh", True)
    # the durable store: one request, answered by the approver, delivered once (to the restarted run)
    db = sqlite3.connect(run / "trials" / trial / "approvals.sqlite")
    rows = db.execute("SELECT id, state, decided_by, delivered_attempt, requested_at, decided_at FROM requests").fetchall()
    assert len(rows) == 1 and rows[0][1:4] == ("approved", "scripted_approver", 1)
    assert rows[0][0] == fault["request_id"]
    evs = _events(run, trial)
    asked = [e["data"]["joined"] for e in evs if e["kind"] == "approval_requested"]
    assert asked == [False, True]
    killed_at = next(e["ts"] for e in evs if e["kind"] == "fault_injected")
    assert rows[0][5] >= killed_at  # the answer was written after the agent that asked was killed
    assert r["usage"]["interventions"] == 1 and r["extra"]["duplicate_side_effects"] == 0


@pytest.mark.slow
def test_a_fault_that_never_fires_is_not_exercised(tmp_path):
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    task = suite / "tasks" / "book-entry" / "task.yaml"
    task.write_text(task.read_text().replace("process_faults: [{kind: agent_killed, tool: ledger.record_entry}]",
                                             "process_faults: [{kind: agent_killed, tool: ledger.record_entry, "
                                             "on_call: 5}]"))
    run = tmp_path / "run"
    start_run(RunOptions(suite=suite, out=run, agents=[str(SUITE / "agents" / "careful.yaml")], tasks=["book-entry"]))
    r = _final_results(run)["book-entry.fault-agent-killed.careful.r1"]
    assert r["end_state"] == "pass" and r["extra"]["process_faults"] == [] and r["extra"]["process_fault_plan"]
    row = recovery_of_run(run).row("careful")
    assert row.not_exercised == 1 and row.restarts == 1  # the sandbox_restart variant still fired


@pytest.mark.slow
def test_a_restarted_agent_that_hangs_ends_at_the_attempts_wall_time(tmp_path):
    """The restart gets the time left of the attempt's budget, not a fresh one: a second run that
    hangs is cut at the first run's deadline (end state timeout), and the write is still judged."""
    suite = tmp_path / "suite"
    shutil.copytree(SUITE, suite)
    task = suite / "tasks" / "book-entry" / "task.yaml"
    task.write_text(task.read_text() + "budget: {wall_time_s: 6}\n")
    agent = tmp_path / "hanger.yaml"
    agent.write_text(PROBE.replace("name: probe", "name: hanger").replace(
        'tmp.write_text("x")', 'tmp.write_text("x")\n    import time\n    time.sleep(3600) if n > 1 else None'))
    run = tmp_path / "run"
    start_run(RunOptions(suite=suite, out=run, agents=[str(agent)], tasks=["book-entry"], variants="all"))
    r = _final_results(run)["book-entry.fault-agent-killed.hanger.r1"]
    assert r["end_state"] == "timeout", (r["end_state"], r["reason"], r["errors"])
    assert r["extra"]["process_faults"][0]["restart"] == "fresh"
    assert r["timings"]["agent_s"] < 6 + 20  # the budget, plus the watchdog's grace: never a second budget
    restart = next(e for e in _events(run, "book-entry.fault-agent-killed.hanger.r1")
                   if e["kind"] == "log" and e["data"].get("restart"))
    assert 0 < restart["data"]["time_left_s"] < 6
