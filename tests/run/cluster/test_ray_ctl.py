"""`assay ctl requeue-infra` under the Ray executor, on a real local cluster: a trial whose setup
failed on its worker node gets one more attempt now, on the cluster, while the run still runs;
the first attempt is kept and the change is in the run's control log. Everything is read from the
runner's own event stream, never guessed with sleeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.store.control_log import read_changes
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import STARTER_RUN_CPU_S, assay_env, cli_timeout, server_process
from tests.run.cluster.cluster import LocalRayCluster
from tests.run.test_ctl import Events, answer, finished, held_suite, started, wait_for_control

pytestmark = pytest.mark.timeout(900)  # a real cluster on a loaded 2-core machine
__all__ = ["held_suite"]  # the fixture, shared with the local executor's test


def test_requeue_infra_on_ray_retries_now_keeping_the_first_attempt(cluster: LocalRayCluster, runs: Path,
                                                                     held_suite, tmp_path: Path) -> None:
    suite, agent, release = held_suite
    run_dir = runs / "requeue"
    cmd = [sys.executable, "-m", "assay.cli.main", "run", str(suite), "--agent", str(agent), "--sandbox", "host",
           "--task", "a", "--task", "s", "-j", "2", "--seed", "1", "-q", "--executor", "ray",
           "--address", cluster.address, "--out", str(run_dir)]
    try:
        with server_process(cmd, env=assay_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
            wait_for_control(run_dir, proc)
            events = Events(run_dir)
            if not events.state["finished"].get("held", {}).get("code", {}).get("infra_error"):
                broke = events.expect(finished("s"), "the setup failure on a worker node")
                assert (broke["end_state"], broke["reason"], broke["final"]) == ("infra_error", "setup", True)

            (tmp_path / "fixed").touch()  # the operator fixes the host
            req = answer(run_dir, "requeue-infra")
            assert [t.split(".")[0] for t in req["change"]["trials"]] == ["s"]
            again = events.expect(started("s"), "the requeued attempt")
            assert again["attempt"] == 2 and again["retry_reason"].startswith("requeued by ")
            assert events.expect(finished("s"), "the requeued attempt's end")["end_state"] == "pass"
            assert answer(run_dir, "requeue-infra")["change"]["trials"] == []  # nothing left to requeue

            (release / "a").touch()
            assert proc.wait(timeout=cli_timeout(2 * STARTER_RUN_CPU_S)) == 0, \
                proc.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
    finally:
        (release / "a").touch()
    rd = RunDir.open(run_dir)
    results = {(r.task_id, r.attempt): r for r in rd.results()}
    assert (results[("s", 1)].end_state.value, results[("s", 1)].reason) == ("infra_error", "setup")
    assert results[("s", 2)].end_state.value == "pass" and results[("s", 2)].sandbox.get("node_id")
    assert results[("s", 2)].retry_reason.startswith("requeued by ")  # type: ignore[union-attr]
    assert [c["command"] for c in read_changes(rd)] == ["requeue-infra", "requeue-infra"]
    report = verify_run(run_dir)
    assert report.ok, report.problems
