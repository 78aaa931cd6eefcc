"""The end state as a pure function of the phase records: every state and reason, no sandbox."""

from __future__ import annotations

import pytest

from assay.agents.base import AgentOutcome
from assay.errors import AdapterError, SetupError, TrialError
from assay.records.results import EndState, PredicateResult
from assay.run.attempt.endstate import Decision, decide
from assay.run.attempt.records import AgentRan, AttemptRecords, PhaseError, Prepared, SetUp, TornDown, Verified
from assay.spec.budget import BudgetName
from assay.verify.verifier import VerifierReport


def report(*passed: bool) -> VerifierReport:
    preds = [PredicateResult(id=f"p{i}", kind="file_exists", required=True, weight=1.0, passed=p) for i, p in enumerate(passed)]
    return VerifierReport(predicates=preds, final_digests={})


def attempt(*, held: bool = True, timed_out: bool = False, budget: BudgetName | None = None,
            **errors: PhaseError) -> AttemptRecords:
    """Every phase ran; ``errors`` puts a failure in the named phases (later phases then did not run)."""
    order = ["prepare", "setup", "agent", "verify"]
    failed_at = min((order.index(p) for p in errors), default=len(order))
    recs: dict[str, object] = {}
    if failed_at >= 0:
        recs["prepare"] = Prepared(name="prepare", error=errors.get("prepare"))
    if failed_at >= 1:
        recs["setup"] = SetUp(name="setup", error=errors.get("setup"))
    if failed_at >= 2:
        recs["agent"] = AgentRan(name="agent", error=errors.get("agent"),
                                 outcome=None if "agent" in errors else AgentOutcome(exit_code=0, timed_out=timed_out))
    recs["teardown"] = TornDown(name="teardown")
    if failed_at >= 3:
        recs["verify"] = Verified(name="verify", error=errors.get("verify"),
                                  report=None if "verify" in errors else report(held))
    return AttemptRecords(budget=budget, **recs)  # type: ignore[arg-type]


def test_pass_only_when_the_verifier_says_so() -> None:
    assert decide(attempt()) == Decision(EndState.passed)
    assert decide(attempt(held=False)) == Decision(EndState.failed, "predicates")


def test_a_failed_attempt_whose_budget_refused_failed_by_budget() -> None:
    assert decide(attempt(held=False, budget=BudgetName.tool_calls)) == Decision(EndState.failed, "budget_exceeded")
    # work done within what the budget allowed still holds: the verifier decides
    assert decide(attempt(held=True, budget=BudgetName.turns)).state is EndState.passed


def test_timeout_is_never_a_pass() -> None:
    assert decide(attempt(timed_out=True)) == Decision(EndState.timeout, "wall_time")
    assert decide(attempt(timed_out=True, held=False, budget=BudgetName.turns)).state is EndState.timeout


@pytest.mark.parametrize("phase", ["prepare", "setup", "agent", "verify"])
def test_infra_error_names_the_failing_phase_s_reason(phase: str) -> None:
    err = PhaseError(f"{phase}_broke", "boom", retryable=phase == "setup")
    d = decide(attempt(**{phase: err}))
    assert d == Decision(EndState.infra_error, f"{phase}_broke", phase == "setup")


def test_the_first_failing_phase_decides() -> None:
    recs = AttemptRecords(prepare=Prepared(name="prepare"), setup=SetUp(name="setup", error=PhaseError("setup", "x")),
                          teardown=TornDown(name="teardown", errors=("destroy failed",)),
                          verify=Verified(name="verify", error=PhaseError("verifier", "y")))
    assert decide(recs).reason == "setup"


def test_teardown_trouble_is_evidence_not_an_end_state() -> None:
    recs = attempt()
    recs = AttemptRecords(prepare=recs.prepare, setup=recs.setup, agent=recs.agent, verify=recs.verify,
                          teardown=TornDown(name="teardown", errors=("sandbox destroy failed: x",)))
    assert decide(recs).state is EndState.passed


def test_skipped_runs_nothing() -> None:
    assert decide(AttemptRecords(skipped="unsupported: tools")) == Decision(EndState.skipped, "unsupported: tools")


def test_a_verdict_missing_without_an_error_is_never_a_pass() -> None:
    recs = AttemptRecords(prepare=Prepared(name="prepare"), setup=SetUp(name="setup"),
                          agent=AgentRan(name="agent", outcome=AgentOutcome(exit_code=0)),
                          teardown=TornDown(name="teardown"))
    assert decide(recs) == Decision(EndState.infra_error, "harness_crash")


def test_phase_errors_keep_their_class() -> None:
    assert PhaseError.of(SetupError("setup script exited 1")) == PhaseError("setup", "setup script exited 1", False)
    e = AdapterError("x", reason="no_gateway")
    assert PhaseError.of(e).reason == "no_gateway"
    assert PhaseError.of(KeyError("k")) == PhaseError("harness_crash", "KeyError: 'k'")
    assert isinstance(e, TrialError)


@pytest.mark.parametrize("bound", ["memory", "pids", "cpu", "disk"])
def test_a_bound_hit_on_the_agent_sandbox_is_a_fail_never_infra(bound: str) -> None:
    from dataclasses import replace

    for recs in (attempt(), attempt(timed_out=True), attempt(agent=PhaseError("adapter_crash", "killed"))):
        hit = replace(recs, teardown=TornDown(name="teardown", resource_limit=bound, cpu_s=1.5))
        assert decide(hit) == Decision(EndState.failed, f"resource_limit: {bound}")
    assert decide(attempt()).state is EndState.passed  # no bound hit: the verifier decides


def test_an_agent_that_trapped_the_harness_fails_never_passes_never_infra() -> None:
    from dataclasses import replace

    from assay.records.incident import incident

    trap = incident("agent_home_trap", "high", "link at sessions/x.jsonl in the agent home", path="sessions/x.jsonl",
                    entry="symlink")
    for recs in (attempt(), attempt(timed_out=True), attempt(verify=PhaseError("verifier_crash", "boom"))):
        hit = replace(recs, teardown=TornDown(name="teardown", incidents=(trap,)))
        assert decide(hit) == Decision(EndState.failed, "tampering")
    other = replace(attempt(), teardown=TornDown(name="teardown", incidents=(incident("left_behind_process", "high", "x"),)))
    assert decide(other).state is EndState.passed  # a leftover is an incident for the gate, not a verdict
