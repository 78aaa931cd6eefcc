"""`assay ctl` on a real running run: pause, jobs N, resume, requeue-infra, stop, each recorded in
the run's control log (sealed in the ledger) with who, when and what; `assay verify` passes after.

The agents block until the test releases them (a file per task); what the runner does is read
from its own event stream (`assay.store.control_client.subscribe`), never guessed with sleeps."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from assay.store.control_client import CONTROL_FILE, address, subscribe
from assay.store.control_log import read_changes
from assay.store.integrity import verify_run
from assay.store.rundir import LEDGER, RunDir
from tests.conftest import assay_env, cli_timeout, server_process, write_agent, write_suite, write_task

WAIT_S = 120


def ctl(run_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", "ctl", str(run_dir), *args, "--json"],
                          capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())


def answer(run_dir: Path, *args: str) -> dict[str, Any]:
    res = ctl(run_dir, *args)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout)


def wait_for_control(run_dir: Path, proc: subprocess.Popen) -> None:
    """The runner's control address: the one file there is to wait for (checked, with a deadline)."""
    deadline = time.monotonic() + WAIT_S
    while address(run_dir) is None:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the runner never wrote its control address"
        time.sleep(0.02)


class Events:
    """The runner's event stream, read by a thread into a queue the test takes from."""

    def __init__(self, run_dir: Path):
        self.q: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stream = subscribe(run_dir)
        self.state = next(self.stream)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        try:
            for e in self.stream:
                self.q.put(e)
        finally:
            self.q.put(None)

    def first_started(self) -> str:
        """The task of the first attempt, already in flight when the stream began or announced on it."""
        running = list(self.state["in_flight_trials"])
        return (running[0] if running else self.expect(started(), "the first attempt")["trial_id"]).split(".")[0]

    def expect(self, pred: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        while True:
            e = self.q.get(timeout=WAIT_S)
            assert e is not None, f"the run ended before {what}"
            if pred(e):
                return e


def started(trial: str | None = None) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["type"] == "attempt_started" and (trial is None or e["trial_id"].startswith(trial + "."))


def finished(trial: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e["type"] == "attempt_finished" and e["trial_id"].startswith(trial + ".")


@pytest.fixture
def held_suite(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Tasks a, b, c (and s, whose setup fails until ``fixed`` exists); each agent holds its attempt
    until ``release/<task>`` exists, except on s."""
    s = write_suite(tmp_path / "suite")
    fixed = tmp_path / "fixed"
    for tid in ("a", "b", "c", "s"):
        extra: dict[str, Any] = {}
        files = None
        if tid == "s":
            extra = {"setup": "setup.sh"}
            files = {"setup.sh": f"#!/bin/sh\ntest -e {fixed} || {{ echo 'host not ready' >&2; exit 1; }}\n"}
        write_task(s, tid, task={"category": "code", "budget": {"wall_time_s": 300}, **extra,
                                 "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]},
                   workspace={"task.txt": tid}, files=files)
    release = tmp_path / "release"
    release.mkdir()
    agent = write_agent(tmp_path / "held.yaml", "held", f"""
        import os, time
        tid = open('task.txt').read().strip()
        while tid != 's' and not os.path.exists(os.path.join({str(release)!r}, tid)):
            time.sleep(0.02)
        open('out.txt', 'w').write('done')
    """)
    return s, agent, release


@pytest.fixture
def runner(held_suite, tmp_path: Path) -> Iterator[Callable[..., tuple[subprocess.Popen, Path]]]:
    suite, agent, release = held_suite
    procs: list[Any] = []

    def start(*tasks: str, jobs: int = 1) -> tuple[subprocess.Popen, Path]:
        run_dir = tmp_path / "run"
        cmd = [sys.executable, "-m", "assay.cli.main", "run", str(suite), "--agent", str(agent), "--sandbox", "host",
               "--out", str(run_dir), "-q", "-j", str(jobs), "--seed", "1"]
        for t in tasks:
            cmd += ["--task", t]
        cm = server_process(cmd, env=assay_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc = cm.__enter__()
        procs.append(cm)
        wait_for_control(run_dir, proc)
        return proc, run_dir

    try:
        yield start
    finally:
        for t in ("a", "b", "c"):
            (release / t).touch()
        for cm in procs:
            cm.__exit__(None, None, None)


def test_pause_jobs_resume_recorded_and_run_verifies(runner, held_suite) -> None:
    _, _, release = held_suite
    proc, run_dir = runner("a", "b", "c", jobs=1)
    events = Events(run_dir)
    first = events.first_started()

    paused = answer(run_dir, "pause")
    assert paused["paused"] is True and paused["change"]["command"] == "pause"
    (release / first).touch()
    events.expect(finished(first), "the attempt in flight to finish while paused")
    retuned = answer(run_dir, "jobs", "3")
    assert retuned["jobs"] == 3 and retuned["paused"] is True
    status = answer(run_dir, "status")
    assert status["in_flight"] == 0 and status["in_flight_trials"] == {}
    assert len(list(run_dir.glob("trials/*/attempts/*/started.json"))) == 1, "a paused run started an attempt"

    answer(run_dir, "resume")
    rest = {events.expect(started(), "an attempt after resume")["trial_id"].split(".")[0] for _ in range(2)}
    assert rest == {"a", "b", "c"} - {first}  # both at once: jobs 3 took effect, and neither is released yet
    for t in rest:
        (release / t).touch()
    assert proc.wait(timeout=cli_timeout()) == 0, proc.stderr.read().decode()

    changes = read_changes(RunDir.open(run_dir))
    assert [c["command"] for c in changes] == ["pause", "jobs", "resume"]
    for c in changes:
        assert "assay ctl" in c["who"] and c["ts"] > 0 and "before" in c and "after" in c
    assert changes[1]["before"]["jobs"] == 1 and changes[1]["after"] == {"jobs": 3}
    ledger = (run_dir / LEDGER).read_text()
    assert "control/0001-pause.json" in ledger and "control/0003-resume.json" in ledger
    assert not (run_dir / CONTROL_FILE).exists()  # the address goes with the runner
    report = verify_run(run_dir)
    assert report.ok, report.problems
    assert sorted(r.end_state.value for r in RunDir.open(run_dir).results()) == ["pass"] * 3

    (run_dir / "control" / "0002-jobs.json").write_text('{"command": "jobs", "who": "someone else"}\n')
    assert any("control/0002-jobs.json" in p for p in verify_run(run_dir).problems)  # a rewritten change is caught


def test_requeue_infra_retries_now_keeping_the_first_attempt(runner, held_suite, tmp_path: Path) -> None:
    _, _, release = held_suite
    proc, run_dir = runner("a", "s", jobs=2)
    events = Events(run_dir)
    if not events.state["finished"].get("held", {}).get("code", {}).get("infra_error"):  # not over before the stream
        broke = events.expect(finished("s"), "the setup failure")
        assert (broke["end_state"], broke["reason"], broke["final"]) == ("infra_error", "setup", True)

    (tmp_path / "fixed").touch()  # the operator fixes the host
    req = answer(run_dir, "requeue-infra")
    assert [t.split(".")[0] for t in req["change"]["trials"]] == ["s"]
    again = events.expect(started("s"), "the requeued attempt")
    assert again["attempt"] == 2 and again["retry_reason"].startswith("requeued by ")
    assert events.expect(finished("s"), "the requeued attempt's end")["end_state"] == "pass"
    assert answer(run_dir, "requeue-infra")["change"]["trials"] == []  # nothing left to requeue

    (release / "a").touch()
    proc.wait(timeout=cli_timeout())
    results = [(r.task_id, r.attempt, r.end_state.value, r.reason) for r in RunDir.open(run_dir).results()]
    assert ("s", 1, "infra_error", "setup") in results and ("s", 2, "pass", None) in results
    assert verify_run(run_dir).ok


def test_stop_finishes_in_flight_and_leaves_the_rest_pending(runner, held_suite) -> None:
    _, _, release = held_suite
    proc, run_dir = runner("a", "b", "c", jobs=1)
    events = Events(run_dir)
    first = events.first_started()
    assert answer(run_dir, "stop")["stopped"] is True
    refused = ctl(run_dir, "resume")
    assert refused.returncode == 2 and "stopping" in refused.stderr
    (release / first).touch()
    assert proc.wait(timeout=cli_timeout()) == 6  # incomplete, never a pass
    assert "assay ctl stop" in proc.stderr.read().decode()  # type: ignore[union-attr]
    results = RunDir.open(run_dir).results()
    assert [(r.task_id, r.end_state.value) for r in results] == [(first, "pass")]
    assert verify_run(run_dir).ok
    gone = ctl(run_dir, "pause")
    assert gone.returncode == 2 and "--resume" in gone.stderr and "Traceback" not in gone.stderr


def test_a_request_without_the_token_changes_nothing(runner) -> None:
    proc, run_dir = runner("a", jobs=1)
    port = address(run_dir)["port"]  # type: ignore[index]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock, sock.makefile("rb") as f:
        sock.sendall(b'{"token": "guess", "op": "stop", "who": "intruder"}\n')
        assert json.loads(f.readline())["ok"] is False
    bad = ctl(run_dir, "jobs", "0")
    assert bad.returncode == 2 and "at least 1" in bad.stderr
    assert answer(run_dir, "status")["stopped"] is False
    assert read_changes(RunDir.open(run_dir)) == []
