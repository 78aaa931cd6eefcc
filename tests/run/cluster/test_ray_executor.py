"""`assay run --executor ray` on a real local cluster: the same results as the local executor
(apart from timings and node ids), the head the only writer, faults of nodes and of the head."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from assay.records.results import AttemptResult, EndState
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import ROOT, STARTER_RUN_CPU_S, assay_env, cli_timeout, write_suite, write_task
from tests.run.cluster.cluster import LocalRayCluster, can_make_read_only

STARTER = ROOT / "examples" / "starter"
pytestmark = pytest.mark.timeout(900)  # a real cluster on a loaded 2-core machine


def assay(*args: str, cwd: Path, cpu_s: float = 2 * STARTER_RUN_CPU_S) -> subprocess.CompletedProcess[str]:
    """`assay ARGS`, bounded by the trials' cost wherever they run: oracle and nop over the starter
    suite, twice the oracle's measured local run."""
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          env=assay_env(), cwd=cwd, timeout=cli_timeout(cpu_s))


def start_assay(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`assay ARGS` as a process of its own (a head the test can kill)."""
    return subprocess.Popen([sys.executable, "-m", "assay.cli.main", *args], env={**assay_env(), **(env or {})},
                            cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@contextmanager
def head(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """A head started by the test: killed on the way out if it is still running."""
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finish(proc: subprocess.Popen[bytes]) -> bytes:
    """The head's stderr once it ended (bounded)."""
    return proc.communicate(timeout=cli_timeout(2 * STARTER_RUN_CPU_S))[1]


def results(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for p in sorted(run_dir.glob("trials/*/attempts/*/result.json")):
        r = json.loads(p.read_text())
        out[(r["trial_id"], r["attempt"])] = r
    return out


def comparable(r: dict[str, Any]) -> dict[str, Any]:
    """A result without what may differ between executors: the run id, timings, which node."""
    r = dict(r)
    for k in ("run_id", "timings"):
        r.pop(k)
    r["sandbox"] = {k: v for k, v in r["sandbox"].items() if k != "node_id"}
    r["predicates"] = [{k: v for k, v in p.items() if k != "duration_s"} for p in r["predicates"]]
    # a native session file carries its own timestamps; every other artifact is byte-identical
    r["artifacts"] = {k: (v if not k.startswith("native.") else "*") for k, v in r["artifacts"].items()}
    return r


def trace_shape(run_dir: Path, trial: str) -> list[tuple[str, str, int, int]]:
    lines = (run_dir / "trials" / trial / "trace.jsonl").read_text().splitlines()
    return [(e["source"], e["kind"], e["seq"], e["attempt"]) for e in map(json.loads, lines)]


def test_workers_cannot_write_the_runs_folder(cluster: LocalRayCluster, runs: Path) -> None:
    """The wall the one-writer tests rely on: a task on a worker node gets EROFS in the runs folder."""
    if not can_make_read_only():
        pytest.skip("needs root and unshare to give worker nodes a read-only runs folder")
    code = ("import ray, errno; ray.init(address=%r, logging_level='ERROR', log_to_driver=False)\n"
            "@ray.remote(num_cpus=0, resources={'assay_sandbox': 1})\n"
            "def probe(p):\n"
            "    try:\n        open(p, 'w').write('x')\n    except OSError as e:\n        return e.errno\n    return 0\n"
            "print(ray.get(probe.remote(%r)))\n") % (cluster.address, str(runs / "probe"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cluster.root)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.strip().splitlines()[-1]) == errno.EROFS
    assert not (runs / "probe").exists()


def test_starter_on_ray_matches_the_local_executor(cluster: LocalRayCluster, runs: Path, tmp_path: Path) -> None:
    local, remote = tmp_path / "local", runs / "starter"
    common = ["--agent", "oracle", "-n", "3", "--seed", "7", "-q"]
    a = assay("run", str(STARTER), *common, "-j", "2", "--out", str(local), cwd=tmp_path)
    assert a.returncode == 0, a.stderr[-3000:]
    b = assay("run", str(STARTER), *common, "-j", "4", "--executor", "ray", "--address", cluster.address,
              "--out", str(remote), cwd=tmp_path)
    assert b.returncode == 0, b.stderr[-3000:]

    ra, rb = results(local), results(remote)
    assert len(ra) == 45 and sorted(ra) == sorted(rb)
    for key in ra:
        assert comparable(ra[key]) == comparable(rb[key]), key
        assert trace_shape(local, key[0]) == trace_shape(remote, key[0])
    nodes = {r["sandbox"]["node_id"] for r in rb.values()}
    workers = {str(n["id"]) for n in cluster.alive_nodes() if "assay_sandbox" in n["resources"]}  # type: ignore[operator]
    assert len(nodes) == 2 and nodes <= workers  # both worker nodes ran attempts, the head none
    assert all("node_id" not in r["sandbox"] for r in ra.values())
    manifest = RunDir.open(remote).manifest()
    assert manifest.plan.executor == "ray" and manifest.plan.seed == 7
    assert verify_run(remote).ok
    v = assay("verify", str(remote), cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr
    # every file of the run directory is the head's: sealed in its ledger (workers could not write there)
    ledger = RunDir.open(remote).ledger()
    trial_files = {p.relative_to(remote).as_posix() for p in (remote / "trials").rglob("*") if p.is_file()}
    assert trial_files and trial_files <= set(ledger)
    # and each worker's own staging folder is left empty after its attempts
    for name in ("w1", "w2"):
        staging = list((cluster.root / name / "tmp").glob("assay-node-*/staging/*"))
        assert staging == [], staging


def test_model_calls_from_worker_nodes_go_through_the_heads_gateway(cluster: LocalRayCluster, runs: Path,
                                                                     tmp_path: Path) -> None:
    local, remote = tmp_path / "local", runs / "gateway"
    common = ["--agent", "reference", "--model", "scripted", "--task", "csv-to-json-totals", "--task",
              "fix-pagination", "--variants", "base", "-q"]
    a = assay("run", str(STARTER), *common, "--out", str(local), cwd=tmp_path)
    assert a.returncode == 0, a.stderr[-3000:]
    b = assay("run", str(STARTER), *common, "--executor", "ray", "--address", cluster.address, "--out", str(remote),
              cwd=tmp_path)
    assert b.returncode == 0, b.stderr[-3000:]
    same_model_calls(local, remote, 2)
    assert verify_run(remote).ok


def same_model_calls(local: Path, remote: Path, count: int) -> None:
    """``count`` attempts, each passed with the same accounting, gateway recording and gateway
    events locally and with the attempt run away from the head (the procs executor's test too)."""
    ra, rb = results(local), results(remote)
    assert sorted(ra) == sorted(rb) and len(rb) == count
    for key, r in rb.items():
        assert r["end_state"] == "pass"
        assert r["usage"]["model_calls"] > 0 and r["usage"] == ra[key]["usage"]  # the same accounting
        assert comparable(r) == comparable(ra[key])
        # the gateway's recording of the attempt, written by the head into the trial folder
        rec = remote / "trials" / key[0] / "attempts" / "1" / "gateway.session.jsonl"
        assert rec.is_file() and rec.read_bytes() == (local / "trials" / key[0] / "attempts" / "1" /
                                                       "gateway.session.jsonl").read_bytes()
        gateway_events = [s for s in trace_shape(remote, key[0]) if s[0] == "gateway"]
        assert gateway_events and gateway_events == [s for s in trace_shape(local, key[0]) if s[0] == "gateway"]


def slow_suite(tmp_path: Path, seconds: float, wall: int = 120) -> tuple[Path, Path]:
    """One task and a command agent that takes ``seconds`` (a shell inside the real sandbox)."""
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "budget": {"wall_time_s": wall},
                             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]})
    agent = tmp_path / "slow.yaml"
    agent.write_text(yaml.safe_dump({"name": "slow", "kind": "command",
                                     "command": ["/bin/sh", "-c", f"sleep {seconds} && echo done > out.txt"]}))
    return s, agent


def wait_started(run_dir: Path, count: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    end = time.monotonic() + timeout
    while len(list(run_dir.glob("trials/*/attempts/*/started.json"))) < count:
        assert proc.poll() is None, (proc.stderr.read() if proc.stderr else b"").decode()[-3000:]
        assert time.monotonic() < end, "no attempt started"
        time.sleep(0.05)


def final_per_trial(rs: list[AttemptResult]) -> dict[str, list[AttemptResult]]:
    by: dict[str, list[AttemptResult]] = {}
    for r in rs:
        by.setdefault(r.trial_id, []).append(r)
    return by


def test_a_worker_node_killed_mid_run_loses_nothing(cluster: LocalRayCluster, runs: Path, tmp_path: Path) -> None:
    victim = cluster.add_worker(slots=2)
    cluster.wait_nodes(4)
    victim_id = cluster.node_id(victim)
    suite, agent = slow_suite(tmp_path, 20)
    run_dir = runs / "node-lost"
    proc = start_assay("run", str(suite), "--agent", str(agent), "-n", "6", "-j", "6", "--executor", "ray",
                       "--address", cluster.address, "--out", str(run_dir), "-q", cwd=tmp_path)
    with head(proc):
        wait_started(run_dir, 6, proc)  # two attempts on each of the three worker nodes
        cluster.kill(victim)
        err = finish(proc)
    assert proc.returncode == 0, err.decode()[-3000:]
    rd = RunDir.open(run_dir)
    by = final_per_trial(rd.results())
    assert sorted(by) == sorted(rd.manifest().plan.trials)  # every planned trial, none extra
    lost = [r for r in rd.results() if r.partial]
    assert len(lost) == 2  # the victim's two attempts, kept
    for r in lost:
        assert (r.end_state, r.reason, r.sandbox["node_id"]) == (EndState.infra_error, "interrupted", victim_id)
    for tid, attempts in by.items():
        finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
        assert len(finals) == 1 and finals[0] is attempts[-1], (tid, attempts)  # ended exactly once
        assert finals[0].end_state is EndState.passed
        assert finals[0].sandbox["node_id"] != victim_id  # the retry ran on another node
    assert verify_run(run_dir).ok


def test_a_worker_that_never_answers_has_its_attempt_closed_and_retried(cluster: LocalRayCluster, runs: Path,
                                                                         tmp_path: Path) -> None:
    """A node worker frozen (SIGSTOP) mid-attempt: its node stays alive to Ray, only the head's
    answer timeout (twice the wall time plus the grace) can notice. The attempt is closed as
    ``interrupted`` with the node's id, retried on another node, and the frozen worker gets no more."""
    victim = cluster.add_worker(slots=1)
    cluster.wait_nodes(4)
    victim_id = cluster.node_id(victim)
    suite, agent = slow_suite(tmp_path, 10, wall=20)
    run_dir = runs / "hung"
    proc = start_assay("run", str(suite), "--agent", str(agent), "-n", "5", "-j", "5", "--executor", "ray",
                       "--address", cluster.address, "--out", str(run_dir), "-q", cwd=tmp_path,
                       env={"ASSAY_RAY_ANSWER_GRACE_S": "15"})
    try:
        with head(proc):
            wait_started(run_dir, 5, proc)  # one attempt on the victim's single slot, the others on w1, w2
            frozen = cluster.processes(victim, "ray::_RayNodeWorker")
            assert len(frozen) == 1, frozen
            os.kill(frozen[0], signal.SIGSTOP)  # mid-attempt: its agent sleeps 10 s
            err = finish(proc)
    finally:
        cluster.kill(victim)  # the node this test started, frozen worker and all
    assert proc.returncode == 0, err.decode()[-3000:]
    rd = RunDir.open(run_dir)
    by = final_per_trial(rd.results())
    assert sorted(by) == sorted(rd.manifest().plan.trials)
    [hung] = [r for r in rd.results() if r.partial]
    assert (hung.end_state, hung.reason, hung.sandbox["node_id"]) == (EndState.infra_error, "interrupted", victim_id)
    assert "did not answer in 55 s" in hung.errors[0]  # 2 x 20 s of wall time + 15 s of grace
    for tid, attempts in by.items():
        finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
        seen = [(r.attempt, r.end_state.value, r.reason, r.retryable, r.sandbox.get("node_id", "")[:12], r.errors)
                for r in attempts]
        assert len(finals) == 1 and finals[0] is attempts[-1] and finals[0].end_state is EndState.passed, (tid, seen)
        assert finals[0].sandbox["node_id"] != victim_id, (tid, seen)  # the retry, and every later attempt, elsewhere
    assert [r.attempt for r in by[hung.trial_id]] == [1, 2]
    assert verify_run(run_dir).ok


def test_a_bad_answer_grace_is_refused_before_anything_is_written(cluster: LocalRayCluster, tmp_path: Path) -> None:
    suite, agent = slow_suite(tmp_path, 0)
    out = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(suite), "--agent", str(agent),
                          "--executor", "ray", "--address", cluster.address, "--out", str(tmp_path / "r")],
                         capture_output=True, text=True, env={**assay_env(), "ASSAY_RAY_ANSWER_GRACE_S": "soon"},
                         cwd=tmp_path, timeout=cli_timeout())
    assert out.returncode == 2 and "ASSAY_RAY_ANSWER_GRACE_S='soon'" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "r").exists()


def test_head_killed_then_resume_on_the_cluster(cluster: LocalRayCluster, runs: Path, tmp_path: Path) -> None:
    suite, agent = slow_suite(tmp_path, 6)
    run_dir = runs / "head-killed"
    proc = start_assay("run", str(suite), "--agent", str(agent), "-n", "6", "-j", "2", "--executor", "ray",
                       "--address", cluster.address, "--out", str(run_dir), "-q", cwd=tmp_path)
    try:
        wait_started(run_dir, 2, proc)
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # the head: the one process that writes the run directory
        proc.wait()
    in_flight = {p.parts[-4] for p in run_dir.glob("trials/*/attempts/*/started.json")
                 if not (p.parent / "result.json").exists()}
    assert in_flight
    out = assay("run", "--resume", str(run_dir), "--executor", "ray", "--address", cluster.address, "-q", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    rd = RunDir.open(run_dir)
    by = final_per_trial(rd.results())
    assert sorted(by) == sorted(rd.manifest().plan.trials)
    for tid, attempts in by.items():
        finals = [r for r in attempts if not (r.end_state is EndState.infra_error and r.retryable)]
        assert len(finals) == 1 and finals[0].end_state is EndState.passed, (tid, attempts)
    assert {r.trial_id for r in rd.results() if r.partial and r.reason == "interrupted"} == in_flight
    assert verify_run(run_dir).ok


def test_deadline_on_the_cluster_closes_attempts_in_flight(cluster: LocalRayCluster, runs: Path, tmp_path: Path) -> None:
    suite, agent = slow_suite(tmp_path, 61)
    run_dir = runs / "deadline"
    t0 = time.monotonic()
    out = assay("run", str(suite), "--agent", str(agent), "-n", "3", "-j", "2", "--executor", "ray", "--address",
                cluster.address, "--deadline", "30", "--out", str(run_dir), "-q", cwd=tmp_path)
    assert time.monotonic() - t0 < 58, out.stderr[-2000:]  # not the agents' 61 s
    rd = RunDir.open(run_dir)
    closed = rd.results()
    started = {p.parts[-4] for p in run_dir.glob("trials/*/attempts/*/started.json")}
    assert closed and {r.trial_id for r in closed} == started  # every attempt that began has its end recorded
    assert all((r.reason, r.partial) == ("deadline", True) for r in closed)
    assert verify_run(run_dir).ok
    end = time.monotonic() + 60  # the workers' sandboxes were released: no agent is left sleeping
    while any(b"sleep 61" in p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()):
        assert time.monotonic() < end, "an agent of the cancelled attempts is still running"
        time.sleep(0.2)
