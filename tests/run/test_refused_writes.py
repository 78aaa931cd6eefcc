"""Which verifier output says the machine refused a write, not that the task is wrong
(``run/refused_writes.py``; the audit's use of it: tests/environments/test_audit.py)."""

from __future__ import annotations

from assay.records.results import AttemptResult, EndState, PredicateResult, Timings
from assay.run.refused_writes import needs_root, refused_writes


def _failed(stdout: str, *, passed: bool = False) -> AttemptResult:
    return AttemptResult(run_id="r", trial_id="t.base.oracle.r1", task_id="t", category="c", variant="base",
                         agent="oracle", repetition=1, attempt=1, end_state=EndState.failed,
                         timings=Timings(started_at=0.0, ended_at=1.0),
                         predicates=[PredicateResult(id="reward", kind="reward_file", required=True, weight=1.0,
                                                     passed=passed, evidence={"stdout": stdout, "exit_code": 0})])


def test_a_refusal_outside_the_workspace_is_named_as_written() -> None:
    lines = refused_writes(_failed("ok\nmkdir: cannot create directory ‘/server’: Permission denied\n"
                                   "PermissionError: [Errno 13] Permission denied: '/etc/app.conf'\n"), "/app")
    assert lines == ["mkdir: cannot create directory ‘/server’: Permission denied",
                     "PermissionError: [Errno 13] Permission denied: '/etc/app.conf'"]
    assert "root" in needs_root(lines) and "/server" in needs_root(lines)


def test_what_is_not_a_refusal_of_the_machine_is_left_to_the_task() -> None:
    assert refused_writes(_failed("PermissionError: [Errno 13] Permission denied: '/app/out/x'"), "/app") == []
    assert refused_writes(_failed("PytestCacheWarning: could not create cache path /tests/.pytest_cache: "
                                  "[Errno 30] Read-only file system: '/tests/x'"), "/app") == []
    assert refused_writes(_failed("AssertionError: 41 != 42"), "/app") == []
    assert refused_writes(_failed("mkdir: cannot create directory ‘/server’: Permission denied", passed=True),
                          "/app") == []  # a predicate that held failed nothing
    assert refused_writes(None, "/app") == []
