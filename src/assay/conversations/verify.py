"""Per-turn verdicts of a conversation task: each turn's predicates judged by the verifier over
the state kept after that turn (its own fresh directory and snapshot, law 2), and one harness
check that the conversation itself ran as declared.

A turn that never ran (the conversation ended before it) fails its predicates: unknown is
failure. A turn that failed fails the attempt even when the final state is right: the agent
must be right at turn N, not only at the end.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from assay.conversations.loop import ConversationLog
from assay.records.results import PredicateResult, Trust
from assay.records.verifier_inputs import VerifierInputs
from assay.sandbox.base import SandboxBackend
from assay.spec.budget import Limits
from assay.spec.load import LoadedTask
from assay.trace.events import TraceEvent
from assay.verify.registry import trust_of
from assay.verify.verifier import run_verifier

#: the id and kind of the harness's own check that the conversation ran to a declared end
CONVERSATION_CHECK = "conversation"
#: ends after which the conversation counts as having run as declared
DECLARED_ENDS = ("turns_done", "goal", "stop_word", "turn_limit")


def conversation_check(log: ConversationLog) -> PredicateResult:
    """Held when the conversation reached a declared end (not off script, not cut by a budget)."""
    return PredicateResult(id=CONVERSATION_CHECK, kind=CONVERSATION_CHECK, required=True, weight=1.0,
                           passed=log.ended_by in DECLARED_ENDS, evidence=log.record(), trust=Trust.state)


async def verify_turns(task: LoadedTask, log: ConversationLog, root: Path, *, initial_digests: dict[str, str],
                       events: list[TraceEvent], backend: SandboxBackend, limits: Limits,
                       extra: VerifierInputs) -> list[PredicateResult]:
    """Every turn's predicates over its kept state (``extra``: the final services' report, which
    the turn's own checkpoint overrides field by field, and the turn's number in
    :attr:`~assay.records.verifier_inputs.VerifierInputs.turn`, so a judge reads that turn's answer), then
    the conversation check."""
    conv = task.spec.conversation
    assert conv is not None
    states = {s.number: s for s in log.states}
    out: list[PredicateResult] = []
    for n, preds in conv.turn_predicates().items():
        state = states.get(n)
        if state is None:
            out += [PredicateResult(id=p.id, kind=p.kind, required=p.required, weight=p.weight, passed=False,
                                    evidence={"turn_not_reached": n, "ended_by": log.ended_by, "detail": log.detail},
                                    trust=trust_of(p.kind), turn=n) for p in preds]
            continue
        if state.not_kept is not None:  # never copied: unknown is failure, whatever the predicate asks
            out += [PredicateResult(id=p.id, kind=p.kind, required=p.required, weight=p.weight, passed=False,
                                    evidence={"state_not_kept": state.not_kept}, trust=trust_of(p.kind), turn=n)
                    for p in preds]
            continue
        view = dataclasses.replace(task, spec=task.spec.model_copy(update={"predicates": preds}))
        report = await run_verifier(view, state.work, root / f"t{n}", initial_digests=initial_digests,
                                    events=[e for e in events if e.seq <= state.end_seq], backend=backend,
                                    limits=limits, extra=extra.merge(state.extra).at_turn(n))
        out += [p.model_copy(update={"turn": n}) for p in report.predicates]
    out.append(conversation_check(log))
    return out
