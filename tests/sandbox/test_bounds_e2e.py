"""Hostile agents against the bounds on a sandbox as a whole, through the real trial engine
(``start_run`` with ``sandbox='bwrap'``), inside a second wall: each attempt is contained, ends
as a ``fail`` with ``resource_limit: <bound>`` (never ``infra_error``), is recorded with the
CPU seconds of agent and verifier, and an honest agent run by the same harness afterwards passes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write_agent, write_suite, write_task

from .walled import run_walled

pytestmark = [pytest.mark.usefixtures("bwrap_backend"), pytest.mark.slow]

HOG = ("import time; b = bytearray(150 << 20); b[::4096] = b'x' * len(b[::4096]); time.sleep(60)")
AGENTS = {  # name -> (script, the bound it must hit)
    "hog": (f"""
        import subprocess
        procs = [subprocess.Popen(["python3", "-c", {HOG!r}]) for _ in range(6)]
        for p in procs:
            p.wait()
    """, "memory"),
    "tmpfs": ("""
        import time
        with open("/tmp/fill", "wb") as f:
            try:
                while True:
                    f.write(b"x" * (1 << 20))
            except OSError:
                pass
        time.sleep(60)
    """, "disk"),
    "filler": ("""
        with open("fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
                f.flush()
    """, "disk"),
    "bomb": ("""
        import os, time
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    """, "pids"),
    "spinner": ("""
        import os
        for _ in range(3):
            if os.fork() == 0:
                break
        while True:
            pass
    """, "cpu"),
}
NESTED = """
    import subprocess, os
    subprocess.Popen(["setsid", "unshare", "--pid", "--fork", "--user", "--map-root-user", "sh", "-c",
                      "touch /tmp/ready; exec sleep 313"])
    while not os.path.exists("/tmp/ready"):
        pass
    open("answer.txt", "w").write("42")
"""
HONEST = """
    open("answer.txt", "w").write("42")
"""


def test_bounds_end_attempts_as_fails_and_the_harness_goes_on(tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "suite")
    limits = {"processes": 48, "memory_mb": 256, "cpu_time_s": 3, "disk_mb": 32}
    write_task(suite, "answer", task={"category": "code", "budget": {"wall_time_s": 40}, "limits": limits,
                                      "predicates": [{"id": "answer", "kind": "command",
                                                      "cmd": "test \"$(cat answer.txt)\" = 42"}]})
    agents_dir = tmp_path / "agents"
    agents_dir.mkdir()
    agents = [str(write_agent(agents_dir / f"{n}.yaml", n, s)) for n, (s, _) in AGENTS.items()]
    agents += [str(write_agent(agents_dir / "nested.yaml", "nested", NESTED)),
               str(write_agent(agents_dir / "honest.yaml", "honest", HONEST))]
    ans = run_walled(f"""
        from assay.run import RunOptions, start_run
        out = start_run(RunOptions(suite=Path({str(suite)!r}), agents={agents!r}, out=Path({str(tmp_path / 'run')!r}),
                                   sandbox="bwrap", max_retries=0))
        answer([{{"agent": r.agent, "end": r.end_state.value, "reason": r.reason,
                  "incidents": [i.model_dump() for i in r.incidents], "timings": r.timings.model_dump(),
                  "bounds": r.sandbox.get("bounds")}} for r in out.results])
    """, timeout=900)
    by = {r["agent"]: r for r in ans}
    assert set(by) == {*AGENTS, "nested", "honest"}, ans
    for name, (_, bound) in AGENTS.items():
        r = by[name]
        assert (r["end"], r["reason"]) == ("fail", f"resource_limit: {bound}"), (name, r)
    assert by["spinner"]["timings"]["agent_cpu_s"] > 3
    nested = [i for i in by["nested"]["incidents"] if i["type"] == "left_behind_process"]
    assert nested and nested[0]["evidence"]["nested_pids"], by["nested"]
    assert any(c == "sleep 313" for c in nested[0]["evidence"]["commands"]), nested
    assert by["honest"]["end"] == "pass", by["honest"]
    for r in ans:  # CPU seconds in every result; the mechanism of every bound in every result
        assert r["timings"]["agent_cpu_s"] is not None and r["timings"]["verify_cpu_s"] is not None, r
        assert set(r["bounds"]) >= {"memory", "pids", "cpu", "disk"}, r
