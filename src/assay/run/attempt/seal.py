"""Sealing an attempt: how it ended recorded in its trace, and its result built from the phase
records. Writing both is the run directory's recorder's job (:mod:`assay.run.recorder`), when
the executor announces the finished attempt."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from assay.records.incident import Incident
from assay.records.results import AttemptResult, EndState, Timings, UsageTotals
from assay.run import hostload
from assay.run.attempt.endstate import Decision
from assay.run.attempt.evidence import add_usage
from assay.run.attempt.records import AttemptRecords
from assay.spec.budget import BudgetName, Limits
from assay.spec.digest import text_name
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter
from assay.untrusted.tree import MAX_ENTRIES, OVERFLOW, WALK_SECONDS
from assay.worlds.call_record import call_record
from assay.worlds.calls import counted_calls



@dataclass(frozen=True)
class SealEnv:
    """What the result records besides the phases: who, when, where."""

    base: dict[str, Any]  # run, trial, task, variant, agent, repetition, attempt, retry_reason
    started: float
    sandbox: dict[str, Any]  # backend facts and network
    host_start: hostload.HostSample | None = None  # the host's load when the attempt started


def ended_by(records: AttemptRecords, decision: Decision) -> BudgetName | None:
    """The budget that ended the attempt (see :func:`budget_that_ended`), else the wall time
    when the watchdog stopped the agent."""
    if records.budget is not None:
        return records.budget
    if decision.state is EndState.timeout:
        return BudgetName.cpu_time if decision.reason == "cpu_time" else BudgetName.wall_time
    return None


def usage_of(records: AttemptRecords, trace: TraceWriter) -> UsageTotals:
    """What the attempt spent: the services' accounting, else the agent's own session. Tool calls,
    when no service counted them, are the calls of the harness's record, as a ``max_calls``
    predicate counts them (worlds/call_record.py): with a gateway, each call the model issued
    (whether or not the agent's log holds it; a call only the log claims is none), else the log's."""
    usage = UsageTotals()
    reports = records.teardown.reports if records.teardown else ()
    for rep in reports:
        if rep.usage is not None:
            usage = add_usage(usage, rep.usage)
    outcome = records.agent.outcome if records.agent is not None else None
    if outcome is not None and outcome.usage is not None and usage.model_calls == 0:
        usage = outcome.usage
    tool_calls = len(counted_calls(call_record(trace.events()).calls))
    if tool_calls and not usage.tool_calls:
        usage = usage.model_copy(update={"tool_calls": tool_calls})
    return usage


def build_result(env: SealEnv, records: AttemptRecords, decision: Decision, trace: TraceWriter) -> AttemptResult:
    """The attempt's result, a function of its records (and the events it recorded)."""
    red = trace.redactor
    torn, verified = records.teardown, records.verify
    outcome = records.agent.outcome if records.agent is not None else None
    report = verified.report if verified is not None else None
    reports = torn.reports if torn else ()
    incidents: list[Incident] = [*(torn.incidents if torn else ()), *(i for rep in reports for i in rep.incidents),
                                 *(verified.incidents if verified else ())]
    errors = list(torn.errors) if torn else []
    failure = records.failure()
    if failure is not None:
        errors.append(failure.message)
    limits = set(outcome.limits_exceeded) if outcome else set()
    if decision.state is EndState.timeout:
        limits.add("cpu_time" if decision.reason == "cpu_time" else "wall_time")
    limits |= {b for rep in reports for b in rep.budget_exceeded}
    if records.budget is not None:
        limits.add(records.budget.value)
    extra: dict[str, Any] = {k: v for rep in reports for k, v in rep.extra.items()}
    if report and report.skipped_entries:
        extra["skipped_entries"] = report.skipped_entries
        if text_name(OVERFLOW) in report.skipped_entries:  # the workspace held more than one walk takes
            extra["tree_bounded"] = {"max_entries": MAX_ENTRIES, "max_seconds": WALK_SECONDS}
    set_up: Limits | None = records.setup.limits if records.setup else None
    host = hostload.between(env.host_start, hostload.sample()) if env.host_start is not None else None
    return AttemptResult(
        **env.base, end_state=decision.state, reason=decision.reason, retryable=decision.retryable,
        predicates_held=report.held if report else False,
        diagnostic_score=report.diagnostic_score if report else 0.0,
        predicates=[p.model_copy(update={"evidence": red.data(p.evidence)}) for p in report.predicates] if report else [],
        timings=Timings(started_at=env.started, ended_at=time.time(),
                        setup_s=records.setup.seconds if records.setup else 0.0,
                        agent_s=records.agent.seconds if records.agent else 0.0,
                        verify_s=verified.seconds if verified else 0.0,
                        agent_cpu_s=torn.cpu_s if torn else None, verify_cpu_s=report.cpu_s if report else None,
                        host_load_per_cpu=host.load_per_cpu if host else None,
                        host_cpu_pressure=host.cpu_pressure if host else None),
        usage=usage_of(records, trace), agent_exit_code=outcome.exit_code if outcome else None,
        agent_claim=red.text(outcome.final_output[-2000:]) if outcome and outcome.final_output else None,
        incidents=incidents, limits_exceeded=sorted(limits), budget_exceeded=ended_by(records, decision),
        errors=errors, artifacts=dict(torn.artifacts) if torn else {},
        sandbox={**env.sandbox, **({"limits": set_up.model_dump()} if set_up is not None else {})},
        extra=red.data(extra),
        # a wall-time timeout only: a CPU-time budget is spent by the agent alone, however busy the host
        host_contended=(decision.state is EndState.timeout and decision.reason == "wall_time" and host is not None
                        and hostload.contended(host)),
    )


def seal(env: SealEnv, records: AttemptRecords, decision: Decision, trace: TraceWriter) -> AttemptResult:
    """Record how the attempt ended in its trace, and return its result (not yet written)."""
    failure = records.failure()
    if decision.state is EndState.infra_error and failure is not None:
        trace.emit(Source.harness, EventKind.error, {"reason": failure.reason, "message": failure.message,
                                                     "retryable": failure.retryable})
    trace.emit(Source.harness, EventKind.attempt_ended, {"end_state": decision.state.value, "reason": decision.reason})
    return build_result(env, records, decision, trace)
