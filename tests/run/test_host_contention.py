"""A timeout under host contention: each attempt records the host's load and CPU pressure
(PSI) beside the CPU time it got; a timeout taken above the thresholds is `host_contended` in
its result, the score's flags (so the report, summary and comparison say it), the terminal and
JUnit; a resume's default -j is capped to the host's CPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.records.results import EndState
from assay.run import RunOptions, hostload, start_run
from assay.score import score_run
from assay.score.compare import compare_scores
from tests.conftest import write_agent, write_suite, write_task

HANG = "import time\nwhile True:\n    time.sleep(0.05)\n"


def _timeout_run(tmp: Path, name: str) -> tuple[Path, object]:
    s = write_suite(tmp / f"suite-{name}")
    write_task(s, "slow", task={"category": "code", "budget": {"wall_time_s": 1},
                                "predicates": [{"id": "d", "kind": "file_contains", "path": "out.txt", "text": "d"}]},
               solution="echo d > out.txt\n")
    agent = write_agent(tmp / f"hang-{name}.yaml", "hang", HANG)
    out = tmp / f"run-{name}"
    outcome = start_run(RunOptions(suite=s, agents=[str(agent)], out=out, sandbox="host"))
    return out, outcome.results[-1]


def test_the_host_is_read_from_procfs() -> None:
    a = hostload.sample()
    b = hostload.sample()
    if not Path("/proc/loadavg").exists():
        pytest.skip("no /proc/loadavg on this host")
    assert a.load1 is not None and a.load1 >= 0
    load = hostload.between(a, b)
    assert load.load_per_cpu is not None and load.load_per_cpu >= 0
    if Path("/proc/pressure/cpu").exists():
        assert a.psi_some_us is not None and b.psi_some_us >= a.psi_some_us
        assert load.cpu_pressure is None or 0 <= load.cpu_pressure <= 1


def test_pressure_is_the_share_of_wall_time_some_task_waited() -> None:
    start = hostload.HostSample(at=100.0, load1=2.0, psi_some_us=1_000_000)
    end = hostload.HostSample(at=110.0, load1=30.0, psi_some_us=6_000_000)  # 5 s waited in 10 s
    load = hostload.between(start, end, n_cpus=2)
    assert load == hostload.HostLoad(load_per_cpu=15.0, cpu_pressure=0.5)
    assert hostload.contended(load)
    calm = hostload.between(hostload.HostSample(0, 0.5, 0), hostload.HostSample(10, 0.4, 100_000), n_cpus=2)
    assert not hostload.contended(calm)  # 1 % waited, load 0.25 per CPU
    assert not hostload.contended(hostload.HostLoad(None, None))  # unknown never flags
    assert hostload.default_jobs(8, n_cpus=2) == 2 and hostload.default_jobs(1, n_cpus=2) == 1


def test_a_timeout_under_contention_is_flagged_everywhere_it_is_read(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    if not Path("/proc/loadavg").exists():
        pytest.skip("no /proc/loadavg on this host")
    # the control first: with thresholds no reading reaches, the same timeout is the agent's alone
    monkeypatch.setattr(hostload, "CONTENDED_PRESSURE", 2.0)
    monkeypatch.setattr(hostload, "CONTENDED_LOAD_PER_CPU", float("inf"))
    calm_dir, calm = _timeout_run(tmp_path, "calm")
    assert calm.end_state is EndState.timeout and not calm.host_contended
    # a real reading of this host, judged against a threshold it reaches (any load is >= 0)
    monkeypatch.setattr(hostload, "CONTENDED_LOAD_PER_CPU", 0.0)
    busy_dir, busy = _timeout_run(tmp_path, "busy")
    assert busy.end_state is EndState.timeout and busy.host_contended
    t = busy.timings
    assert t.host_load_per_cpu is not None  # the host backend does not measure agent CPU; bwrap does (agent_cpu_s)
    doc = score_run(busy_dir)
    assert [x.host_contended for x in doc.trials] == [True]
    assert any("HOST CONTENDED: 1 timeout" in f for f in doc.measured.flags)
    assert not any("HOST CONTENDED" in f for f in score_run(calm_dir).measured.flags)
    cmp = compare_scores(score_run(calm_dir), doc, allow_suite_change=True)
    assert any("HOST CONTENDED" in n for n in cmp.notes)  # the comparison names it
    from assay.report.ci import junit_xml
    from assay.report.markdown import render_markdown

    assert "host_contended" in junit_xml(doc) and "HOST CONTENDED" in render_markdown(doc)
    # a fail is never flagged, whatever the load: only a timeout can be the host's
    s = Path(tmp_path / "suite-busy")
    [nop] = start_run(RunOptions(suite=s, agents=["nop"], out=tmp_path / "run-nop", sandbox="host")).results
    assert nop.end_state is EndState.failed and not nop.host_contended and nop.timings.host_load_per_cpu is not None


def test_a_cpu_time_budget_beside_the_wall_time_one(tmp_path: Path) -> None:
    """A CPU-bound agent under a 1 s CPU budget and a 60 s wall budget: a timeout of the CPU kind,
    ended by the CPU-time budget (the sandbox bounds its CPU as a whole), never host_contended."""
    from assay.sandbox.registry import backends

    table = backends()
    if "bwrap" not in table or not table["bwrap"]().status().usable:
        pytest.skip("bubblewrap backend not available here")
    import yaml

    s = write_suite(tmp_path / "suite")
    write_task(s, "spin", task={"category": "code", "budget": {"wall_time_s": 60, "cpu_time_s": 1},
                                "predicates": [{"id": "d", "kind": "file_contains", "path": "out.txt", "text": "d"}]},
               solution="echo d > out.txt\n")
    agent = tmp_path / "spin.yaml"
    agent.write_text(yaml.safe_dump({"name": "spin", "kind": "command", "command": ["/bin/sh", "-c", "while :; do :; done"]}))
    [r] = start_run(RunOptions(suite=s, agents=[str(agent)], out=tmp_path / "run", sandbox="bwrap")).results
    assert r.end_state is EndState.timeout and r.reason == "cpu_time", (r.reason, r.errors)
    assert r.budget_exceeded is not None and r.budget_exceeded.value == "cpu_time" and "cpu_time" in r.limits_exceeded
    assert not r.host_contended and r.timings.agent_s < 30  # it did not wait for the wall budget
    assert r.sandbox["limits"]["cpu_time_s"] == 1
