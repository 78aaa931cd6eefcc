"""The live progress shows what the run waits on: the gateway backing off from a real loopback
upstream that answers 429 (which model, how many calls wait, until when), and the run budget
(its estimate before the first trial, the moment it is reached)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console

from assay.cli.progress import Backoff, ProgressPlugin
from assay.run import RunOptions, start_run
from assay.sandbox.registry import get_backend
from assay.spec.run_budget import RunBudget
from assay.trace.events import EventKind
from assay.trace.writer import read_events
from tests.conftest import write_suite, write_task
from tests.gateway.fake_upstream import Upstream
from tests.gateway.test_run_e2e import make_suite


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=300, color_system=None), buf


def _sandbox() -> str:
    return "bwrap" if get_backend("bwrap").status().usable else "host"


@pytest.mark.slow
def test_progress_shows_the_gateway_backing_off_from_an_upstream_429(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_UPSTREAM_API_KEY", "sk-upstream-progress-0123456789")
    up = Upstream(fail_first=[429], retry_after="0.2").start()
    s = write_suite(tmp_path / "suite")
    write_task(s, "hello", task={"category": "code", "budget": {"wall_time_s": 60},
                                 "predicates": [{"id": "said", "kind": "file_exists", "path": "never.txt"}]})
    console, buf = _console()
    try:
        out = start_run(RunOptions(suite=s, agents=["reference"], model=f"upstream:{up.url}/v1#up-model",
                                   sandbox=_sandbox(), out=tmp_path / "run", plugins=[ProgressPlugin(console)]))
    finally:
        up.stop()
    [r] = out.results
    retries = [e for e in read_events(out.run_dir.trace_path(r.trial_id))
               if e.kind is EventKind.log and e.data.get("reason") == "upstream_retry"]
    assert [(e.data["model"], e.data["status"]) for e in retries] == [("up-model", 429)]
    assert r.end_state.value != "infra_error" and r.usage.model_calls == 1  # retried, never the agent's error
    text = buf.getvalue()
    wait = retries[0].data["wait_s"]
    until = time.strftime("%H:%M:%S", time.localtime(retries[0].ts + wait))
    assert f"backing off from upstream up-model: HTTP 429, retry 1 in {wait:.1f} s (until {until})" in text
    assert f"backing off: up-model (429) 1 waiting until {until}" in text  # in the live bar while it waits


def test_backoff_counts_waiting_calls_per_model_and_forgets_waits_that_ended() -> None:
    b = Backoff()
    assert b.add("m1", until=time.time() + 3600, status=429) is True
    assert b.add("m1", until=time.time() + 7200, status=503) is False  # already backing off from m1
    assert b.add("m2", until=time.time() + 60, status=None) is True
    line = b.line()
    assert line.startswith("backing off: m1 (429,503) 2 waiting until ") and "; m2 1 waiting until " in line
    assert b.line(now=time.time() + 120).startswith("backing off: m1 (429,503) 2 waiting") and "m2" not in \
        b.line(now=time.time() + 120)
    assert b.line(now=time.time() + 8000) == ""


def test_progress_prints_the_estimate_and_the_stop_of_the_run_budget(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "suite", budget={"tokens": 5000})
    console, buf = _console()
    out = start_run(RunOptions(suite=suite, agents=["reference"], model="scripted", sandbox=_sandbox(), repeat=2,
                               out=tmp_path / "run", plugins=[ProgressPlugin(console)],
                               run_budget=RunBudget(max_tokens=1)))
    text = " ".join(buf.getvalue().split())
    est = out.manifest.run_budget.estimate
    assert est.tokens == 10000 and est.trials == 2
    assert "run budget 1 tokens; worst case by the task budgets and the price table:" in text
    assert "10000 tokens (one attempt of each of 2 trial(s)" in text
    assert "WARNING the worst case may not fit the run budget (worst-case tokens 10000 > 1)" in text
    spent = out.budget.spend.tokens
    assert f"RUN BUDGET REACHED (tokens): spent {spent} of 1 tokens; no new attempt starts" in text
    assert text.index("worst case") < text.index("RUN BUDGET REACHED")
