"""Trace files: redacted before writing, sequenced without gaps, robust to a torn last line."""

from __future__ import annotations

from pathlib import Path

from assay.run import RunOptions, start_run
from assay.store.rundir import RunDir
from assay.trace import EventKind, Redactor, Source, TraceWriter, read_events
from tests.conftest import write_agent, write_suite, write_task


def test_redactor_replaces_known_and_generic_secrets() -> None:
    red = Redactor({"gateway_key": "assay-key-0123456789"})
    text = "key=assay-key-0123456789 and sk-abcdefghijklmnopqrstuv and Bearer abcdefghijklmnopqrstuvwxyz"
    out = red.text(text)
    assert "assay-key-0123456789" not in out and "[REDACTED:gateway_key]" in out
    assert "sk-abcdefghijklmnopqrstuv" not in out and "abcdefghijklmnopqrstuvwxyz" not in out
    assert red.scan(text) == ["gateway_key"]
    assert red.data({"k": ["x assay-key-0123456789"]}) == {"k": ["x [REDACTED:gateway_key]"]}


def test_writer_redacts_and_continues_sequence_after_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    w = TraceWriter(path, "t1", redactor=Redactor({"k": "secret-value-123"}))
    w.emit(Source.agent, EventKind.log, {"msg": "using secret-value-123"})
    w.emit(Source.agent, EventKind.log, {"msg": "second"})
    with open(path, "a") as f:
        f.write('{"seq": 2, "ts": 1, "trial_id": "t1", "attem')  # the runner died mid-write
    w2 = TraceWriter(path, "t1")
    w2.attempt = 2
    w2.emit(Source.harness, EventKind.attempt_started, {})
    events = read_events(path)
    assert [e.seq for e in events] == [0, 1, 2]
    assert "secret-value-123" not in path.read_text()
    assert '"attem' in path.read_text()  # the torn bytes are kept, never rewritten
    assert read_events(path, attempt=2)[0].kind is EventKind.attempt_started


def test_canary_in_agent_output_never_reaches_evidence(tmp_path: Path) -> None:
    """Secrets known to the run are redacted from stdout artifacts and trace alike."""
    from assay.run.attempt.trial import RunContext  # noqa: F401  (the secrets map lives on the run context)

    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "predicates": [{"id": "x", "kind": "file_exists", "path": "x"}]})
    agent = write_agent(tmp_path / "leak.yaml", "leak", "print('token sk-live-abcdefghijklmnopqrstuvwx')\n")
    out = start_run(RunOptions(suite=s, agents=[str(agent)], out=tmp_path / "run", sandbox="host"))
    rd = RunDir.open(tmp_path / "run")
    [r] = out.results
    stdout = rd.read_artifact(r.artifacts["agent.stdout"]).decode()
    assert "sk-live-abcdefghijklmnopqrstuvwx" not in stdout and "[REDACTED]" in stdout
    assert "sk-live-abcdefghijklmnopqrstuvwx" not in rd.trace_path(r.trial_id).read_text()
