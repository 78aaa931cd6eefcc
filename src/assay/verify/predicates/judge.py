"""The ``judge`` predicate: a calibrated LLM judge's verdict, failing closed.

The judge model is reached through the harness (``ctx.extra.judge``: a
:class:`~assay.judge.service.JudgeConnection` to the judge's own gateway, for ``--judge-model``). The judge's
calibration record is checked first: a missing, stale or below-threshold calibration never
holds. Such a judge is still asked, and its verdict is recorded as *uncalibrated* (``counted:
false``) so a reader sees what it would have said; it never counts. An answer of a calibrated
judge that does not parse is an infrastructure error, never a score. An answer longer than
:data:`MAX_ANSWER_CHARS` is never sent to the judge and fails.

Trust level ``model_judged``: the verdict is a model's opinion of text the agent wrote, text that
may argue with its judge. The evidence carries the calibration's agreement figures and the
judged answer's length, for the report's judge section.

Inside a conversation turn (``ctx.extra.turn``: the verifier of turn N) the same judge, gate
and evidence apply to that turn: ``final_output`` is the agent's answer of turn N and the
question is the user's message of turn N, both as the harness recorded them
(:mod:`assay.trace.turns`); ``file:PATH`` reads the workspace kept after turn N.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.errors import VerifierError
from assay.judge.calibrate import load_judge
from assay.judge.client import JudgeClient, JudgeOutputError
from assay.judge.gate import calibration_status, read_record
from assay.records.results import Trust
from assay.spec.digest import sha256_file
from assay.spec.judge import SWAPPED, JudgeCheck
from assay.spec.predicates import PredicateSpec
from assay.trace.events import EventKind
from assay.trace.turns import last_turn, turn_answer, turn_request
from assay.verify.context import Outcome, PathEscape, VerifyContext, excerpt
from assay.verify.registry import evaluator


#: the longest answer a judge is asked about (characters): a final answer is kept to its last 4,000,
#: but a ``file:`` target is read up to the verifier's 16 MiB; a longer answer fails unjudged
MAX_ANSWER_CHARS = 32_000


def _turn(ctx: VerifyContext) -> int | None:
    """The conversation turn this verifier judges (None: the final state)."""
    n = ctx.extra.turn
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _final_output(ctx: VerifyContext) -> str | None:
    """The agent's answer: of the judged turn, or of a conversation's last turn (never an earlier
    turn's when that one gave none), or the run's final answer."""
    if (n := _turn(ctx) or last_turn(ctx.events)) is not None:
        return turn_answer(ctx.events, n)
    texts = [str(e.data.get("text", "")) for e in ctx.events if e.kind is EventKind.final_output]
    return texts[-1] if texts else None


def _question(ctx: VerifyContext) -> str:
    """What the user asked: the task's prompt, or in a conversation turn that turn's message."""
    n = _turn(ctx)
    return (turn_request(ctx.events, n) if n is not None else None) or ctx.task.prompt


def _target(spec: JudgeCheck, ctx: VerifyContext) -> str | None:
    if spec.target == "final_output":
        return _final_output(ctx)
    if spec.target.startswith("file:"):
        try:
            p = ctx.resolve(spec.target[5:])
        except PathEscape:
            return None
        return ctx.read_text(spec.target[5:]) if p.is_file() else None
    raise VerifierError(f"predicate {spec.id!r}: target must be final_output or file:PATH", reason="verifier_setup")


def _figures(path: Path) -> dict[str, Any] | None:
    """The agreement figures of the calibration record (None when there is no readable one)."""
    try:
        return read_record(path).agreement.model_dump()
    except (OSError, ValueError, ValidationError):
        return None


@evaluator("judge", trust=Trust.model_judged)
async def judge(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, JudgeCheck)
    conn = ctx.extra.judge
    if conn is None:
        raise VerifierError(f"predicate {spec.id!r} needs a judge model, and this run has none (fix: --judge-model)",
                            reason="judge_unavailable")
    jspec = load_judge(ctx.resolve(spec.judge, base=ctx.code))
    record = ctx.resolve(spec.calibration, base=ctx.code)
    status = calibration_status(jspec, conn.model, conn.backend, record)
    ev: dict[str, Any] = {"judge": jspec.name, "judge_version": jspec.version, "model": conn.model,
                          "judge_digest": jspec.digest(conn.model, conn.backend), "mode": jspec.mode,
                          "calibration": status.label, "calibration_reasons": status.reasons,
                          "counted": status.may_gate, "agreement": _figures(record) if record.is_file() else None,
                          "calibration_sha256": sha256_file(record) if record.is_file() else None}
    if _turn(ctx) is not None:
        ev["turn"] = _turn(ctx)
    answer = _target(spec, ctx)
    if answer is None:
        return Outcome(False, {**ev, "target": spec.target, "missing": True})
    ev.update({"answer": excerpt(answer, 300), "answer_chars": len(answer)})
    if len(answer) > MAX_ANSWER_CHARS:  # not sent: the agent's size would set the judge's cost or break it
        return Outcome(False, {**ev, "too_long": True, "max_answer_chars": MAX_ANSWER_CHARS})
    client = JudgeClient(conn.url, conn.key, conn.model, jspec)
    try:
        held = await _ask(spec, jspec.mode, jspec.pass_score, jspec.scale, client, ctx, answer, ev)
    except JudgeOutputError as e:
        if e.reason == "run_budget":  # the run's budget refused the judge: no verdict; retried on resume
            raise VerifierError(f"predicate {spec.id!r}: {e}", reason="run_budget", retryable=True) from None
        if status.may_gate:
            raise VerifierError(f"predicate {spec.id!r}: {e}", reason="judge_output") from None
        ev["unparsed"] = str(e)[:300]  # an uncounted judge's babble is recorded, not an infrastructure error
        return Outcome(False, ev)
    return Outcome(held and status.may_gate, ev)  # an uncalibrated judge cannot contribute to a strict pass


async def _ask(spec: JudgeCheck, mode: str, pass_score: float, scale: Any, client: JudgeClient,
               ctx: VerifyContext, answer: str, ev: dict[str, Any]) -> bool:
    """Ask the judge; its verdict goes into ``ev``; returns whether the verdict holds."""
    prompt = _question(ctx)
    if mode == "pairwise":
        if spec.reference is None:
            raise VerifierError(f"predicate {spec.id!r}: a pairwise judge needs 'reference'", reason="verifier_setup")
        ref = ctx.resolve(spec.reference, base=ctx.hidden).read_text(encoding="utf-8")
        first = await asyncio.to_thread(client.pairwise, prompt, answer, ref)
        swapped = await asyncio.to_thread(client.pairwise, prompt, ref, answer)
        # a verdict that flips with the order is no verdict: never a tie that may be accepted
        verdict = first if SWAPPED[first] == swapped else "flipped"
        ev.update({"verdict": verdict, "first_order": first, "swapped_order": swapped, "accept": spec.accept})
        return verdict == "A" or (verdict == "tie" and spec.accept == "win_or_tie")
    score = await asyncio.to_thread(client.absolute, prompt, answer)
    ev.update({"score": score, "pass_score": pass_score, "scale": list(scale)})
    return score >= pass_score
