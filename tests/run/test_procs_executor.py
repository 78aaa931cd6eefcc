"""`assay run --executor procs`: attempts in worker processes of this machine, the head the run
directory's one writer. The same results as the local executor (apart from timings and which
worker), a worker killed mid-attempt loses nothing, Ctrl-C and SIGTERM stop cleanly, bad options
are refused before anything is written. Real bwrap sandboxes, the built-in oracle and nop agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
import yaml

from assay.approvals.admin import list_requests
from assay.records.results import EndState
from assay.run_budget.log import read_log
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from assay.store.scratch import scratch_root
from tests.conftest import ROOT, STARTER_RUN_CPU_S, assay_env, cli_timeout, run_assay, write_suite, write_task
from tests.gateway.fake_upstream import Upstream
from tests.gateway.test_run_e2e import make_suite
from tests.run.cluster.test_ray_executor import (comparable, final_per_trial, head, results, same_model_calls,
                                                trace_shape)
from tests.run.cluster.test_ray_run_budget import _tokens as tokens
from tests.run.cluster.test_ray_worlds import CANARY, world_suite

pytestmark = pytest.mark.timeout(600)
STARTER = ROOT / "examples" / "starter"
RUN_CPU_S = 2 * STARTER_RUN_CPU_S


def bwrap_usable() -> bool:
    from assay.sandbox.registry import get_backend

    try:
        return bool(get_backend("bwrap").facts())
    except Exception:  # noqa: BLE001 - any reason bwrap cannot run here
        return False


needs_bwrap = pytest.mark.skipif(not bwrap_usable(), reason="needs a usable bubblewrap sandbox")


def two_task_suite(calc_suite: Path) -> Path:
    """conftest's calc task (its hidden pytest test runs in the verifier's own sandbox) and a
    declarative one."""
    write_task(calc_suite, "answer", task={"category": "code", "budget": {"wall_time_s": 60},
                                           "predicates": [{"id": "answer", "kind": "file_contains", "path": "answer",
                                                           "text": "42"}]},
               workspace={"README": "write 42 to answer\n"}, solution="#!/bin/sh\necho 42 > answer\n")
    return calc_suite


def waiting_suite(tmp_path: Path, wall_time_s: int = 120) -> tuple[Path, Path, Path]:
    """One task and a command agent that marks its start (``began``) and then waits until the test
    creates ``go`` in a folder it mounts: the test decides when attempts end, no timing involved."""
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": wall_time_s},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    agent = tmp_path / "waiter.yaml"
    agent.write_text(yaml.safe_dump({"name": "waiter", "kind": "command", "mounts": [str(ctl)], "command": [
        "/bin/sh", "-c", f"touch began; while [ ! -e {ctl}/go ]; do sleep 0.05; done; echo done > out.txt"]}))
    return s, agent, ctl


def start_head(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`assay ARGS` as a process of its own session (the test signals only it and what it started)."""
    return subprocess.Popen([sys.executable, "-m", "assay.cli.main", *args], env={**assay_env(), **(env or {})},
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def wait_for(cond: Callable[[], bool], proc: subprocess.Popen[bytes], why: str, timeout_s: float = 180) -> None:
    """Poll ``cond`` (the run's own files and processes are the only signal) while the head runs."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert proc.poll() is None, (proc.stderr.read() if proc.stderr else b"").decode()[-3000:]
        assert time.monotonic() < deadline, why
        time.sleep(0.02)


def began(run_dir: Path) -> int:
    """Agents that have begun (their mark in a worker's scratch workspace)."""
    return sum(1 for _ in scratch_root(run_dir).glob("workers/*/scratch/*/*/workspace/began"))


def worker_pids(head: int) -> list[int]:
    """The head's worker processes (children of the head started by multiprocessing's spawn)."""
    out = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == head and b"spawn_main" in (p / "cmdline").read_bytes():
                out.append(int(p.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(out)


def is_worker(pid: int) -> bool:
    """Whether ``pid`` is still a worker process (a zombie's command line is empty)."""
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def agents_running(ctl: Path) -> int:
    """Processes of the waiting agent still running anywhere (by its command line)."""
    mark = f"{ctl}/go".encode()
    n = 0
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            n += mark in p.read_bytes() and b"while" in p.read_bytes()
        except OSError:
            continue
    return n


def untimed(doc: object) -> object:
    """A score document without what names the run or measures time (wall times, when scored)."""
    if isinstance(doc, dict):
        return {k: untimed(v) for k, v in doc.items()
                if "wall" not in k and k not in ("run_id", "scored_at", "manifest_sha256")}
    return [untimed(v) for v in doc] if isinstance(doc, list) else doc


def finish(proc: subprocess.Popen[bytes]) -> str:
    return proc.communicate(timeout=cli_timeout(RUN_CPU_S))[1].decode()


@needs_bwrap
def test_procs_matches_the_local_executor(tmp_path: Path, calc_suite: Path) -> None:
    suite = two_task_suite(calc_suite)
    local, procs = tmp_path / "local", tmp_path / "procs"
    common = ["--agent", "oracle,nop", "-n", "2", "--seed", "11", "-q"]
    a = run_assay("run", str(suite), *common, "-j", "2", "--out", str(local), cwd=tmp_path, cpu_s=RUN_CPU_S)
    assert a.returncode == 0, a.stderr[-3000:]
    b = run_assay("run", str(suite), *common, "-j", "4", "--executor", "procs", "--workers", "2", "--out", str(procs),
                  cwd=tmp_path, cpu_s=RUN_CPU_S)
    assert b.returncode == 0, b.stderr[-3000:]

    ra, rb = results(local), results(procs)
    assert len(ra) == 8 and sorted(ra) == sorted(rb)
    assert {r["end_state"] for r in rb.values()} == {"pass", "fail"}
    for key in ra:
        assert comparable(ra[key]) == comparable(rb[key]), key
        assert trace_shape(local, key[0]) == trace_shape(procs, key[0])
    assert {r["sandbox"]["node_id"].split(":")[0] for r in rb.values()} == {"w1", "w2"}  # both workers ran attempts
    assert all("node_id" not in r["sandbox"] for r in ra.values())
    manifest = RunDir.open(procs).manifest()
    assert manifest.plan.executor == "procs" and manifest.plan.seed == 11
    # the same files, the head the one writer: every file of the run is sealed in its ledger
    files = {p.relative_to(procs).as_posix() for p in (procs / "trials").rglob("*") if p.is_file()}
    assert files == {p.relative_to(local).as_posix() for p in (local / "trials").rglob("*") if p.is_file()}
    assert files <= set(RunDir.open(procs).ledger())
    assert verify_run(procs).ok
    v = run_assay("verify", str(procs), cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr
    scores = [json.loads(run_assay("score", str(d), "--json", cwd=tmp_path).stdout) for d in (local, procs)]
    assert untimed(scores[0]) == untimed(scores[1])  # the same figures: every one but the times
    assert not scratch_root(procs).exists()  # the workers' folders went with the run's scratch


@needs_bwrap
def test_model_calls_from_workers_go_through_the_heads_gateway(tmp_path: Path) -> None:
    """The reference agent (its loop runs inside the sandbox) against the scripted model: every
    call crosses the head's one gateway, recorded and counted exactly as in a local run."""
    local, procs = tmp_path / "local", tmp_path / "procs"
    common = ["--agent", "reference", "--model", "scripted", "--task", "csv-to-json-totals", "--task",
              "fix-pagination", "--variants", "base", "-q"]
    a = run_assay("run", str(STARTER), *common, "--out", str(local), cwd=tmp_path, cpu_s=RUN_CPU_S)
    assert a.returncode == 0, a.stderr[-3000:]
    b = run_assay("run", str(STARTER), *common, "-j", "2", "--executor", "procs", "--workers", "2", "--out", str(procs),
                  cwd=tmp_path, cpu_s=RUN_CPU_S)
    assert b.returncode == 0, b.stderr[-3000:]
    same_model_calls(local, procs, 2)
    assert verify_run(procs).ok


@needs_bwrap
def test_the_run_budget_holds_across_workers(tmp_path: Path) -> None:
    """The hub's one meter (in the head) admits every worker's model calls: crossed mid-run, the
    run stops like a local one (exit 6, the ``stopped`` record, spend equal to the upstream's own
    count), and a resume with a higher limit finishes it."""
    up = Upstream(text="I will leave calc.py as it is.").start()
    try:
        suite = make_suite(tmp_path / "suite")
        run_dir = tmp_path / "run"
        model = ["-a", "reference", "--model", f"upstream:{up.url}/v1#up-model", "--executor", "procs", "-q"]
        out = run_assay("run", str(suite), *model, "-n", "6", "-j", "4", "--workers", "2", "--max-tokens", "1",
                        "--out", str(run_dir), cwd=tmp_path, cpu_s=RUN_CPU_S)
        assert out.returncode == 6, out.stderr[-3000:]
        rd = RunDir.open(run_dir)
        [stop] = read_log(rd)
        assert stop["event"] == "stopped" and stop["reached"] == "tokens"
        assert stop["spent"]["tokens"] == tokens(rd) == up.usage_input + up.usage_output > 1
        assert up.requests == up.answered  # a refused call never reached the upstream
        assert len({r.sandbox["node_id"] for r in rd.results()}) == 2
        done = run_assay("run", "--resume", str(run_dir), "--max-tokens", "1000000", "--executor", "procs", "-q",
                         cwd=tmp_path, cpu_s=RUN_CPU_S)
        assert done.returncode == 0, done.stderr[-3000:]
        assert [e["event"] for e in read_log(rd)] == ["stopped", "changed"]
        assert sorted(final_per_trial(rd.results())) == sorted(rd.manifest().plan.trials)
        assert tokens(rd) == up.usage_input + up.usage_output  # both sessions: every call charged once
        assert verify_run(run_dir).ok
    finally:
        up.stop()


@needs_bwrap
def test_world_tools_canaries_and_a_live_approval_reach_attempts_in_workers(tmp_path: Path) -> None:
    """The world tool server and the trials' approval stores are the head's (its hub): each
    attempt, in its own worker, reaches its worlds with its own key only, gets the canary and the
    shim its session planted (the canary redacted in what the head writes), and waits for a
    person's `assay approvals decide` on the run directory."""
    suite, agent = world_suite(tmp_path)
    run_dir = tmp_path / "run"
    proc = start_head("run", str(suite), "--agent", str(agent), "-n", "2", "-j", "2", "--executor", "procs",
                      "--workers", "2", "--out", str(run_dir), "-q", cwd=tmp_path)
    with head(proc):
        wait_for(lambda: (run_dir / "trials").is_dir() and len(list_requests(run_dir, pending_only=True)) == 2,
                 proc, "the approval requests never reached the run directory", timeout_s=300)
        for req in list_requests(run_dir, pending_only=True):
            out = run_assay("approvals", "decide", str(run_dir), str(req["id"]), "approve", cwd=tmp_path)
            assert out.returncode == 0, out.stderr
        err = finish(proc)
    assert proc.returncode == 0, err[-3000:]
    results = RunDir.open(run_dir).results()
    assert len({r.sandbox["node_id"] for r in results}) == 2  # one attempt per worker
    for r in results:
        assert r.end_state is EndState.passed, (r.reason, r.errors, [(p.id, p.passed) for p in r.predicates])
    assert {d["decided_by"] for d in list_requests(run_dir)} == {"human:cli"}
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert not [p for p in files if CANARY.encode() in p.read_bytes()]
    assert any(b"[REDACTED:canary:tok]" in p.read_bytes() for p in files)
    assert verify_run(run_dir).ok


@needs_bwrap
def test_a_worker_killed_mid_attempt_loses_nothing(tmp_path: Path) -> None:
    suite, agent, ctl = waiting_suite(tmp_path)
    run_dir = tmp_path / "run"
    proc = start_head("run", str(suite), "--agent", str(agent), "-n", "2", "-j", "2", "--executor", "procs",
                      "--workers", "2", "--out", str(run_dir), "-q", cwd=tmp_path)
    with head(proc):  # killed on the way out if it still runs
        wait_for(lambda: began(run_dir) == 2, proc, "the agents never began")  # one on each worker
        pids = worker_pids(proc.pid)
        assert len(pids) == 2, pids
        victim = pids[0]
        os.kill(victim, signal.SIGKILL)  # a worker process of the head this test started, mid-attempt
        wait_for(lambda: agents_running(ctl) == 1, proc, "the killed worker's agent outlived it")
        wait_for(lambda: victim not in worker_pids(proc.pid) and len(worker_pids(proc.pid)) == 2, proc,
                 "no worker took the killed one's place")
        (ctl / "go").touch()
        err = finish(proc)
    assert proc.returncode == 0, err[-3000:]
    rd = RunDir.open(run_dir)
    by = final_per_trial(rd.results())
    assert sorted(by) == sorted(rd.manifest().plan.trials)  # every planned trial, none extra
    [lost] = [r for r in rd.results() if r.partial]  # the victim's attempt, kept
    assert (lost.end_state, lost.reason, lost.attempt) == (EndState.infra_error, "interrupted", 1)
    assert lost.sandbox["node_id"].endswith(f":{victim}")
    assert f"worker process {victim} ended (signal 9)" in lost.errors[0]
    for tid, attempts in by.items():
        finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
        assert len(finals) == 1 and finals[0] is attempts[-1], (tid, attempts)
        assert finals[0].end_state is EndState.passed, (tid, attempts)
        assert not finals[0].sandbox["node_id"].endswith(f":{victim}")
    assert [r.attempt for r in by[lost.trial_id]] == [1, 2]  # retried once
    assert verify_run(run_dir).ok


@needs_bwrap
def test_a_worker_that_never_answers_is_replaced_and_its_attempt_retried(tmp_path: Path) -> None:
    """A worker frozen (SIGSTOP) mid-attempt still holds its socket: only the answer timeout (twice
    the wall time plus the grace) notices. It is killed, its attempt closed as ``interrupted`` and
    retried on the worker started in its place."""
    suite, agent, ctl = waiting_suite(tmp_path, wall_time_s=10)
    run_dir = tmp_path / "run"
    proc = start_head("run", str(suite), "--agent", str(agent), "-n", "2", "-j", "2", "--executor", "procs",
                      "--workers", "2", "--out", str(run_dir), "-q", cwd=tmp_path,
                      env={"ASSAY_RAY_ANSWER_GRACE_S": "5"})
    with head(proc):  # killed on the way out if it still runs
        wait_for(lambda: began(run_dir) == 2, proc, "the agents never began")
        victim = worker_pids(proc.pid)[0]
        os.kill(victim, signal.SIGSTOP)  # a worker of the head this test started; the head kills it
        (ctl / "go").touch()  # the other attempt ends; the frozen worker's never answers
        err = finish(proc)
    assert proc.returncode == 0, err[-3000:]
    rd = RunDir.open(run_dir)
    [hung] = [r for r in rd.results() if r.partial]
    assert (hung.end_state, hung.reason) == (EndState.infra_error, "interrupted")
    assert hung.sandbox["node_id"].endswith(f":{victim}") and "did not answer in 25 s" in hung.errors[0]
    by = final_per_trial(rd.results())
    assert [r.attempt for r in by[hung.trial_id]] == [1, 2] and by[hung.trial_id][-1].end_state is EndState.passed
    assert all(attempts[-1].end_state is EndState.passed for attempts in by.values())
    assert not is_worker(victim)  # killed and reaped
    assert verify_run(run_dir).ok


@needs_bwrap
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_head_leaves_no_worker_or_agent_and_resumes(tmp_path: Path, sig: signal.Signals) -> None:
    """Ctrl-C (the head cancels its attempts, each worker releases its sandboxes and ends) and
    SIGTERM (the head ends at once; its workers see it gone, cancel their attempts and end)."""
    suite, agent, ctl = waiting_suite(tmp_path)
    run_dir = tmp_path / "run"
    proc = start_head("run", str(suite), "--agent", str(agent), "-n", "3", "-j", "2", "--executor", "procs",
                      "--workers", "2", "--out", str(run_dir), "-q", cwd=tmp_path)
    with head(proc):  # killed on the way out if it still runs
        wait_for(lambda: began(run_dir) == 2, proc, "the agents never began")
        pids = worker_pids(proc.pid)
        assert len(pids) == 2, pids
        if sig == signal.SIGINT:  # Ctrl-C as a terminal sends it: to the head's whole process group
            os.killpg(proc.pid, sig)  # (the group of the head this test started, in a session of its own)
        else:
            os.kill(proc.pid, sig)  # `kill PID`: the head alone
        err = finish(proc)
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGTERM), err[-3000:]
    deadline = time.monotonic() + cli_timeout()
    while agents_running(ctl) or any(is_worker(p) for p in pids):
        assert time.monotonic() < deadline, "a worker or its agent outlived the stopped head"
        time.sleep(0.05)
    (ctl / "go").touch()
    out = run_assay("run", "--resume", str(run_dir), "--executor", "procs", "-q", cwd=tmp_path, cpu_s=RUN_CPU_S)
    assert out.returncode == 0, out.stderr[-3000:]
    rd = RunDir.open(run_dir)
    by = final_per_trial(rd.results())
    assert sorted(by) == sorted(rd.manifest().plan.trials)
    for tid, attempts in by.items():
        assert attempts[-1].end_state is EndState.passed, (tid, attempts)
    closed = {(r.reason, r.partial) for r in rd.results() if r.end_state is EndState.infra_error}
    assert closed == {("interrupted", True)}
    assert verify_run(run_dir).ok


@pytest.mark.parametrize(("args", "says"), [
    (["--executor", "procs", "--workers", "0"], "--workers must be at least 1"),
    (["--workers", "2"], "--workers is the number of worker processes: use it with --executor procs"),
    (["--executor", "proc"], "--executor must be one of local, procs, ray, not 'proc'"),
])
def test_a_bad_option_is_refused_before_anything_is_written(tmp_path: Path, calc_suite: Path, args: list[str],
                                                           says: str) -> None:
    out = run_assay("run", str(calc_suite), "--agent", "nop", *args, "--out", str(tmp_path / "r"), cwd=tmp_path)
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert not (tmp_path / "r").exists()
