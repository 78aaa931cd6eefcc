"""World tasks on a real local Ray cluster: attempts on two worker nodes reach the head's tool
server (bound to every interface and advertised, as on a real cluster) with their own key
only; the files the world session plants (a canary, the tool shim) reach the worker's sandbox
and the canary is redacted there; a person's live approval (`assay approvals decide` on the
run directory) reaches the attempt waiting for it on its worker node."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest
import yaml

from assay.approvals.admin import list_requests
from assay.records.results import EndState
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.conftest import write_suite, write_task
from tests.run.cluster.cluster import LocalRayCluster, free_port
from tests.run.cluster.test_ray_executor import assay, finish, head, start_assay

pytestmark = pytest.mark.timeout(900)

CANARY = "cnry_fixed_value_for_this_test_7f3a"
ENTRY = {"date": "2026-04-02", "amount": 58, "currency": "CNY", "category": "dining", "merchant": "Harbor Dumpling House"}
#: run by the agent in its sandbox: a key that is not its own is refused, then the real call
PROBE = """import json, os, urllib.error, urllib.request
def status(key):
    req = urllib.request.Request(os.environ["ASSAY_TOOLS_URL"] + "/tools", headers={"Authorization": "Bearer " + key})
    try:
        return urllib.request.urlopen(req, timeout=60).status
    except urllib.error.HTTPError as e:
        return e.code
forged = "wk-" + "0" * 40
json.dump({"own": status(os.environ["ASSAY_TOOLS_KEY"]), "forged": status(forged)}, open("keys.json", "w"))
print("token " + os.environ.get("CANARY_TOKEN", "missing"))
"""


def outside_address() -> str | None:
    """This machine's address on its first non-loopback interface (None: it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 1))  # no packet is sent: it only picks the route's source
        except OSError:
            return None
        ip = s.getsockname()[0]
    return None if ip.startswith("127.") else ip


def world_suite(tmp_path: Path) -> tuple[Path, Path]:
    s = write_suite(tmp_path / "suite", categories=[{"id": "books", "weight": 1}])
    write_task(s, "book", task={
        "category": "books", "tools": ["ledger.*"], "risk": "external_write", "budget": {"wall_time_s": 300},
        "worlds": {"ledger": {"categories": ["dining", "transport"], "entries": []}},
        "approvals": {"policies": [{"tool": "ledger.record_entry", "action": "ask"}],
                      "approver": {"rules": [{"tool": "ledger.record_entry", "decision": "timeout"}]},
                      "timeout_s": 240},
        "canaries": [{"name": "tok", "env": "CANARY_TOKEN", "file": ".canary", "value": CANARY}],
        "predicates": [
            {"id": "booked", "kind": "world_diff", "world": "ledger",
             "changes": [{"table": "entries", "op": "added", "match": ENTRY}]},
            {"id": "own-key-only", "kind": "file_contains", "path": "keys.json", "text": ['"own": 200', '"forged": 401']},
            {"id": "canary-planted", "kind": "file_contains", "path": "planted.txt", "text": "yes"}]},
        workspace={"probe.py": PROBE})
    agent = tmp_path / "booker.yaml"
    call = f"$ASSAY_TOOL ledger.record_entry --json '{json.dumps(ENTRY)}'"
    agent.write_text(yaml.safe_dump({"name": "booker", "kind": "command", "command": [
        "/bin/sh", "-c", f"test -s .canary && echo yes > planted.txt; python3 probe.py && {call}"]}))
    return s, agent


def test_world_tools_and_a_live_approval_reach_attempts_on_worker_nodes(cluster: LocalRayCluster, runs: Path,
                                                                        tmp_path: Path) -> None:
    suite, agent = world_suite(tmp_path)
    run_dir = runs / "worlds"
    # the head's services on every interface, handed to workers under the address given
    port = free_port()
    env = {"ASSAY_GATEWAY_HOST": "0.0.0.0", "ASSAY_SERVICES_ADVERTISE": "127.0.0.1", "ASSAY_TOOLS_PORT": str(port)}
    proc = start_assay("run", str(suite), "--agent", str(agent), "-n", "2", "-j", "2", "--executor", "ray",
                       "--address", cluster.address, "--out", str(run_dir), "-q", cwd=tmp_path, env=env)
    with head(proc):
        end = time.monotonic() + 300
        pending: list[dict[str, object]] = []
        while len(pending) < 2:  # each attempt waits for a person on its own worker node
            assert proc.poll() is None, (proc.stderr.read() if proc.stderr else b"").decode()[-3000:]
            assert time.monotonic() < end, "the approval requests never reached the run directory"
            pending = list_requests(run_dir, pending_only=True) if (run_dir / "trials").is_dir() else []
            time.sleep(0.2)
        # the tool server listens beyond loopback (where another machine's nodes would reach it),
        # and there too it answers only a key it handed out
        outside = outside_address()
        if outside is not None:
            assert httpx.get(f"http://{outside}:{port}/health", timeout=30, trust_env=False).status_code == 200
            forged = httpx.get(f"http://{outside}:{port}/tools", headers={"Authorization": "Bearer wk-" + "1" * 40},
                               timeout=30, trust_env=False)
            assert forged.status_code == 401
        for req in pending:
            out = assay("approvals", "decide", str(run_dir), str(req["id"]), "approve", cwd=tmp_path)
            assert out.returncode == 0, out.stderr
        err = finish(proc)
    assert proc.returncode == 0, err.decode()[-3000:]
    rd = RunDir.open(run_dir)
    results = rd.results()
    assert len(results) == 2 and len({r.sandbox["node_id"] for r in results}) == 2  # one attempt per worker node
    for r in results:
        assert r.end_state is EndState.passed, (r.reason, r.errors, [(p.id, p.passed) for p in r.predicates])
    decided = list_requests(run_dir)
    assert len(decided) == 2 and {d["decided_by"] for d in decided} == {"human:cli"}
    assert {d["trial_id"] for d in decided} == {r.trial_id for r in results}  # each attempt its own request
    # the canary the agent printed is redacted in the evidence the head wrote; nowhere in clear
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert not [p for p in files if CANARY.encode() in p.read_bytes()]
    assert any(b"[REDACTED:canary:tok]" in p.read_bytes() for p in files)
    assert verify_run(run_dir).ok
