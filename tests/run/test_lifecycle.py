"""The trial lifecycle: end states, the watchdog, retries only for classified infra errors,
every attempt kept, agents refused before the run."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from assay.errors import AgentUnavailable, SandboxError, UsageError
from assay.records.results import EndState
from assay.run import RunOptions, start_run
from assay.sandbox.host import HostBackend
from assay.registry import UnknownPlugin
from assay.sandbox.registry import register_sandbox_backend
from assay.store.rundir import RunDir
from assay.trace import read_events
from tests.conftest import write_agent, write_suite, write_task

FILE_TASK = {"category": "code", "budget": {"wall_time_s": 30},
             "predicates": [{"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]}


def file_suite(tmp_path: Path, **task) -> Path:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={**FILE_TASK, **task}, solution="echo done > out.txt\n")
    return s


def run(suite: Path, agents: list[str], out: Path, **kw) -> list:
    return start_run(RunOptions(suite=suite, agents=agents, out=out, sandbox=kw.pop("sandbox", "host"), **kw)).results


def test_oracle_passes_nop_fails_and_trace_is_sequenced(calc_suite: Path, tmp_path: Path) -> None:
    results = {r.agent: r for r in run(calc_suite, ["oracle", "nop"], tmp_path / "run")}
    assert results["oracle"].end_state is EndState.passed and results["oracle"].diagnostic_score == 100
    assert results["nop"].end_state is EndState.failed and results["nop"].diagnostic_score == 0
    events = read_events(RunDir(tmp_path / "run").trace_path(results["oracle"].trial_id))
    assert [e.seq for e in events] == list(range(len(events)))
    kinds = [e.kind.value for e in events]
    assert kinds[0] == "attempt_started" and kinds[-1] == "attempt_ended"
    assert "predicate_result" in kinds and "user_message" in kinds


def test_agent_claim_is_recorded_never_used(tmp_path: Path) -> None:
    s = file_suite(tmp_path)
    agent = write_agent(tmp_path / "liar.yaml", "liar", "print('I have completed the task successfully. PASS')\n")
    [r] = run(s, [str(agent)], tmp_path / "run")
    assert r.end_state is EndState.failed
    assert "completed the task" in (r.agent_claim or "")


def test_watchdog_kills_whole_process_group_on_timeout(tmp_path: Path) -> None:
    s = file_suite(tmp_path, budget={"wall_time_s": 1.5})
    pidfile = tmp_path / "child.pid"
    agent = write_agent(tmp_path / "hang.yaml", "hang", f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "300"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        open("out.txt", "w").write("done")   # the work is done, but the agent never exits
        time.sleep(300)
    """)
    [r] = run(s, [str(agent)], tmp_path / "run")
    assert r.end_state is EndState.timeout and "wall_time" in r.limits_exceeded
    assert r.predicates_held  # the verifier still ran for the evidence, but a timeout is never a pass
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{child}/stat").exists() and Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"child {child} of the timed-out agent survived")


def test_setup_failure_is_infra_error_not_retried(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={**FILE_TASK, "setup": "setup.sh"}, files={"setup.sh": "echo broken >&2; exit 4\n"},
               solution="echo done > out.txt\n")
    results = run(s, ["oracle"], tmp_path / "run")
    assert [(r.attempt, r.end_state, r.reason) for r in results] == [(1, EndState.infra_error, "setup")]
    assert "broken" in results[0].errors[0]


def test_setup_runs_before_snapshot(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "setup": "setup.sh", "risk": "read_only", "predicates": [
        {"id": "same", "kind": "unchanged"}, {"id": "gen", "kind": "file_exists", "path": "generated.log"}]},
        files={"setup.sh": "echo log > generated.log\n"}, solution="true\n")
    [r] = run(s, ["oracle"], tmp_path / "run")
    assert r.end_state is EndState.passed and not r.incidents


def test_read_only_task_write_is_incident(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "ro", task={"category": "code", "risk": "read_only", "predicates": [
        {"id": "answer", "kind": "file_exists", "path": "notes.txt"}]}, workspace={"notes.txt": "keep"},
        solution="echo tampered >> notes.txt\n")
    [r] = run(s, ["oracle"], tmp_path / "run")
    assert [i.type for i in r.incidents] == ["read_only_write"]
    assert r.incidents[0].evidence["paths"] == ["notes.txt"]


class FlakyBackend(HostBackend):
    """Host sandbox whose first create fails with a classified, retryable error."""

    name = "flaky-test"
    calls = 0

    async def create(self, spec):
        type(self).calls += 1
        if type(self).calls == 1:
            raise SandboxError("sandbox could not start (test)", retryable=True, reason="sandbox_start")
        return await super().create(spec)


class BrokenBackend(HostBackend):
    name = "broken-test"

    async def create(self, spec):
        raise SandboxError("always broken (test)", retryable=True, reason="sandbox_start")


def test_retry_only_for_classified_infra_error_and_every_attempt_kept(tmp_path: Path) -> None:
    register_sandbox_backend(FlakyBackend)
    FlakyBackend.calls = 0
    results = run(file_suite(tmp_path), ["oracle"], tmp_path / "run", sandbox="flaky-test")
    assert [(r.attempt, r.end_state.value, r.retry_reason) for r in results] == [
        (1, "infra_error", None), (2, "pass", "sandbox_start")]
    assert (tmp_path / "run/trials" / results[0].trial_id / "attempts/1/result.json").exists()


def test_retries_bounded(tmp_path: Path) -> None:
    register_sandbox_backend(BrokenBackend)
    results = run(file_suite(tmp_path), ["oracle"], tmp_path / "run", sandbox="broken-test", max_retries=2)
    assert [r.attempt for r in results] == [1, 2, 3]
    assert all(r.end_state is EndState.infra_error for r in results)


def test_failing_agent_is_not_retried(tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "crash.yaml", "crash", "raise SystemExit(7)\n")
    results = run(file_suite(tmp_path), [str(agent)], tmp_path / "run")
    assert [(r.attempt, r.end_state, r.agent_exit_code) for r in results] == [(1, EndState.failed, 7)]


def test_unknown_agent_refused_before_run(tmp_path: Path) -> None:
    with pytest.raises(UnknownPlugin, match="unknown agent 'ghost'"):
        run(file_suite(tmp_path), ["ghost"], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_command_agent_missing_executable_refused_before_run(tmp_path: Path) -> None:
    cfg = tmp_path / "missing.yaml"
    cfg.write_text("name: missing\nkind: command\ncommand: [definitely-not-installed-agent, '{prompt}']\n")
    with pytest.raises(AgentUnavailable, match="not found on PATH"):
        run(file_suite(tmp_path), [str(cfg)], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_command_agent_unknown_placeholder_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("name: bad\nkind: command\ncommand: [sh, -c, 'echo {promt}']\n")
    with pytest.raises(AgentUnavailable, match="unknown placeholder"):
        run(file_suite(tmp_path), [str(cfg)], tmp_path / "run")


def test_command_agent_templating(tmp_path: Path) -> None:
    script = """
        import os, sys, json
        cfg = json.load(open(os.path.join(os.environ["HOME"], ".config/agent.json")))
        open("out.txt", "w").write(sys.argv[1] + " " + cfg["task"] + " " + open(sys.argv[2]).read())
    """
    agent = write_agent(tmp_path / "tpl.yaml", "tpl", script, files={".config/agent.json": '{"task": "{task_id}"}'})
    import yaml

    data = yaml.safe_load(agent.read_text())
    data["command"] += ["{workspace}", "{prompt_file}"]
    agent.write_text(yaml.safe_dump(data))
    s = file_suite(tmp_path)
    (s / "tasks/f/prompt.md").write_text("done please")
    [r] = run(s, [str(agent)], tmp_path / "run")
    assert r.end_state is EndState.passed, r


def test_agent_needing_model_without_model_is_usage_error(tmp_path: Path) -> None:
    cfg = tmp_path / "llm.yaml"
    cfg.write_text("name: llm\nkind: command\ncommand: ['true']\nneeds_gateway: true\n")
    with pytest.raises(UsageError, match="--model"):
        run(file_suite(tmp_path), [str(cfg)], tmp_path / "run")


def test_result_files_are_never_overwritten(calc_suite: Path, tmp_path: Path) -> None:
    from assay.errors import RunDirError

    [r] = run(calc_suite, ["nop"], tmp_path / "run")
    rd = RunDir.open(tmp_path / "run")
    with pytest.raises(RunDirError, match="never overwritten"):
        rd.write_result(r.model_copy(update={"end_state": EndState.passed}))
    assert rd.result(r.trial_id, 1).end_state is EndState.failed


def test_existing_run_dir_refused(calc_suite: Path, tmp_path: Path) -> None:
    from assay.errors import RunDirError

    run(calc_suite, ["nop"], tmp_path / "run")
    with pytest.raises(RunDirError, match="not empty"):
        run(calc_suite, ["nop"], tmp_path / "run")


def test_verifier_crash_is_infra_error_never_pass(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "v", task={"category": "code", "predicates": [{"id": "plug", "kind": "python", "file": "check.py"}]},
               verify={"check.py": "def check(ctx):\n    raise ValueError('verifier bug')\n"},
               solution="echo done > out.txt\n")
    results = run(s, ["oracle"], tmp_path / "run")
    assert [(r.end_state, r.reason) for r in results] == [(EndState.infra_error, "verifier_crash")]
    assert "verifier bug" in results[0].errors[0]


def test_read_only_task_may_write_its_declared_outputs(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "ro", task={"category": "code", "risk": "read_only", "outputs": ["answer.txt"], "predicates": [
        {"id": "answer", "kind": "file_exists", "path": "answer.txt"}]}, workspace={"notes.txt": "keep"},
        solution="echo cause > answer.txt\n")
    [r] = run(s, ["oracle"], tmp_path / "run")
    assert r.end_state is EndState.passed and r.incidents == []
    write_task(s, "ro", task={"category": "code", "risk": "read_only", "outputs": ["answer.txt"], "predicates": [
        {"id": "answer", "kind": "file_exists", "path": "answer.txt"}]}, workspace={"notes.txt": "keep"},
        solution="echo cause > answer.txt; echo x >> notes.txt\n")
    [r] = run(s, ["oracle"], tmp_path / "run2")
    assert [i.evidence["paths"] for i in r.incidents] == [["notes.txt"]]


def test_leftovers_of_a_failed_attempt_are_in_its_result(tmp_path: Path) -> None:
    """An attempt that ends in infra_error still kills and records what it left running: the setup
    script runs in a sandbox of its own, so what it left is the task's (``setup_left_running``,
    low), killed with that sandbox before the agent's exists."""
    s = write_suite(tmp_path / "suite")
    daemon = ("(setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' &); "
              "while [ ! -s daemon.pid ]; do :; done; exit 3\n")
    write_task(s, "f", task={**FILE_TASK, "setup": "setup.sh"}, files={"setup.sh": daemon},
               solution="echo done > out.txt\n")
    [r] = run(s, ["oracle"], tmp_path / "run")
    assert (r.end_state, r.reason) == (EndState.infra_error, "setup")
    [inc] = r.incidents
    assert inc.type == "setup_left_running" and inc.severity == "low"
    assert any("sleep 300" in c for c in inc.evidence["commands"])


def test_tool_calls_counted_once_per_exposure() -> None:
    from assay.harness.evidence import count_tool_calls
    from assay.trace.events import EventKind, Source, TraceEvent

    def ev(seq: int, source: str, name: str, args: dict) -> TraceEvent:
        return TraceEvent(seq=seq, ts=0, trial_id="t", attempt=1, source=Source(source), kind=EventKind.tool_call,
                          data={"name": name, "arguments": args})

    events = [ev(0, "agent", "shell", {"command": "assay-tool ledger.record_entry --json '{}'"}),
              ev(1, "world", "ledger.record_entry", {}),
              ev(2, "agent", "ledger.list_entries", {}),  # the agent's own copy of a native world call
              ev(3, "world", "ledger.list_entries", {}),
              ev(4, "agent", "shell", {"command": "ls"})]
    assert count_tool_calls(events) == 3
