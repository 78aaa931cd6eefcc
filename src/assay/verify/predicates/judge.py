"""The ``judge`` predicate: a calibrated LLM judge's verdict, failing closed.

The judge model is reached through the harness (``ctx.extra["judge"]``: a
:class:`~assay.judge.service.JudgeConnection` to the judge's own gateway, for ``--judge-model``). The judge's
calibration record is checked first: a missing, stale or below-threshold calibration never
holds. An answer of the judge that does not parse is an infrastructure error, never a score.
"""

from __future__ import annotations

import asyncio
from typing import Any

from assay.errors import VerifierError
from assay.judge.calibrate import load_judge
from assay.judge.client import JudgeClient, JudgeOutputError
from assay.judge.gate import calibration_status
from assay.spec.judge import JudgeCheck
from assay.spec.predicates import PredicateSpec
from assay.trace.events import EventKind
from assay.verify.context import Outcome, PathEscape, VerifyContext, excerpt
from assay.verify.registry import evaluator


def _final_output(ctx: VerifyContext) -> str | None:
    texts = [str(e.data.get("text", "")) for e in ctx.events if e.kind is EventKind.final_output]
    return texts[-1] if texts else None


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


@evaluator("judge")
async def judge(spec: PredicateSpec, ctx: VerifyContext) -> Outcome:
    assert isinstance(spec, JudgeCheck)
    conn = ctx.extra.get("judge")
    if conn is None:
        raise VerifierError(f"predicate {spec.id!r} needs a judge model, and this run has none (fix: --judge-model)",
                            reason="judge_unavailable")
    jspec = load_judge(ctx.resolve(spec.judge, base=ctx.code))
    status = calibration_status(jspec, conn.model, conn.backend, ctx.resolve(spec.calibration, base=ctx.code))
    ev: dict[str, Any] = {"judge": jspec.name, "judge_version": jspec.version, "model": conn.model,
                          "judge_digest": jspec.digest(conn.model, conn.backend),
                          "calibration": status.label, "calibration_reasons": status.reasons}
    if not status.may_gate:
        return Outcome(False, ev)  # an uncalibrated judge cannot contribute to a strict pass
    answer = _target(spec, ctx)
    if answer is None:
        return Outcome(False, {**ev, "target": spec.target, "missing": True})
    client = JudgeClient(conn.url, conn.key, conn.model, jspec)
    prompt = ctx.task.prompt
    try:
        if jspec.mode == "pairwise":
            if spec.reference is None:
                raise VerifierError(f"predicate {spec.id!r}: a pairwise judge needs 'reference'", reason="verifier_setup")
            ref = ctx.resolve(spec.reference, base=ctx.hidden).read_text(encoding="utf-8")
            first = await asyncio.to_thread(client.pairwise, prompt, answer, ref)
            swapped = await asyncio.to_thread(client.pairwise, prompt, ref, answer)
            verdict = first if {"A": "B", "B": "A", "tie": "tie"}[first] == swapped else "tie"
            held = verdict == "A" or (verdict == "tie" and spec.accept == "win_or_tie")
            ev.update({"verdict": verdict, "first_order": first, "swapped_order": swapped, "accept": spec.accept})
        else:
            score = await asyncio.to_thread(client.absolute, prompt, answer)
            held = score >= jspec.pass_score
            ev.update({"score": score, "pass_score": jspec.pass_score})
    except JudgeOutputError as e:
        raise VerifierError(f"predicate {spec.id!r}: {e}", reason="judge_output") from None
    ev["answer"] = excerpt(answer, 300)
    return Outcome(held, ev)
