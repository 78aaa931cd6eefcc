"""The campaign deadline: what is still running then is stopped and closed with a recorded end
state (kept, partial, resumable); nothing is lost and the run directory verifies."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from assay.records.results import EndState
from assay.run import RunOptions, start_run
from assay.run.executor import RetryPolicy, pending_trials
from assay.run.plan import parse_trial_id
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import write_suite, write_task


def test_deadline_closes_what_is_in_flight_and_leaves_the_rest_pending(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": 120},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    agent = tmp_path / "slow.yaml"
    agent.write_text(yaml.safe_dump({"name": "slow", "kind": "command",
                                     "command": ["/bin/sh", "-c", "sleep 60 && echo done > out.txt"]}))
    t0 = time.monotonic()
    out = start_run(RunOptions(suite=s, agents=[str(agent)], repeat=3, jobs=2, out=tmp_path / "r", deadline_s=3))
    assert time.monotonic() - t0 < 50  # stopped at the deadline, not after the agents' 60 s
    rd = RunDir.open(tmp_path / "r")
    closed = rd.results()
    assert len(closed) == 2  # the two in flight (-j 2); the third never started
    for r in closed:
        assert (r.end_state, r.reason, r.partial, r.retryable) == (EndState.infra_error, "deadline", True, True)
        events = [e for e in rd.trace_path(r.trial_id).read_text().splitlines() if '"attempt_ended"' in e]
        assert len(events) == 1 and '"deadline"' in events[0]
    assert out.manifest.plan.deadline_s == 3
    plan = [parse_trial_id(t) for t in rd.manifest().plan.trials]
    assert pending_trials(rd, plan, RetryPolicy(1)) == plan  # a resume runs all three again
    assert RetryPolicy(0).should_retry(closed[:1])  # a deadline never uses up the trial's retries
    assert verify_run(tmp_path / "r").ok
