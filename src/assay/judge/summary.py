"""The judges of a run, read from the final attempts' judge predicates (a conversation turn's as
well as the final state's, each verdict with its turn): for each judge (name, version and model)
its calibration figures next to every verdict it gave, counted or not, and this run's length bias
(the same rank correlation the calibration measures).

The figures travel in each verdict's evidence (the verifier copied them from the calibration
record it checked), so the report needs nothing but the run directory."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from assay.judge.agreement import spearman
from assay.records.results import AttemptResult
from assay.spec.judge import Agreement, JudgeSummary, JudgeVerdict


def final_attempts(results: Iterable[AttemptResult]) -> list[AttemptResult]:
    """The last attempt of each trial (the one that is scored), in trial order."""
    last: dict[str, AttemptResult] = {}
    for r in results:
        if r.trial_id not in last or r.attempt > last[r.trial_id].attempt:
            last[r.trial_id] = r
    return [last[t] for t in sorted(last)]


def _agreement(raw: Any) -> Agreement | None:
    try:
        return Agreement.model_validate(raw) if isinstance(raw, dict) else None
    except ValidationError:
        return None


def judge_summaries(results: Iterable[AttemptResult]) -> list[JudgeSummary]:
    """One summary per judge and model, from the final attempts' ``judge`` predicates."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in final_attempts(results):
        for p in r.predicates:
            if p.kind != "judge" or "judge" not in p.evidence:
                continue  # an infrastructure error before the judge was known leaves no verdict
            ev = p.evidence
            key = (str(ev["judge"]), str(ev.get("judge_version", "")), str(ev.get("model", "")))
            g = groups.setdefault(key, {"mode": str(ev.get("mode", "")), "calibration": set(), "agreement": None,
                                        "scale": None, "verdicts": []})
            scale = ev.get("scale")
            if isinstance(scale, list) and len(scale) == 2 and all(isinstance(x, (int, float)) for x in scale):
                g["scale"] = (float(scale[0]), float(scale[1]))
            g["calibration"].add(str(ev.get("calibration", "unknown")))
            g["agreement"] = g["agreement"] or _agreement(ev.get("agreement"))
            verdict = ev.get("verdict")
            score = ev.get("score")
            g["verdicts"].append(JudgeVerdict(
                trial_id=r.trial_id, task_id=r.task_id, agent=r.agent, predicate=p.id, turn=p.turn,
                answer_chars=ev.get("answer_chars") if isinstance(ev.get("answer_chars"), int) else None,
                verdict=verdict if verdict in ("A", "B", "tie") else None,
                score=float(score) if isinstance(score, (int, float)) else None,
                held=p.passed, counted=ev.get("counted") is True))
    out = []
    for (j, v, m), g in sorted(groups.items()):
        s = JudgeSummary(judge=j, version=v, model=m, mode=g["mode"], calibration=sorted(g["calibration"]),
                         agreement=g["agreement"], scale=g["scale"], verdicts=g["verdicts"])
        out.append(s.model_copy(update={"length_rho": _length_rho(s)}))
    return out


def _length_rho(s: JudgeSummary) -> float | None:
    pts = [(v.answer_chars, p) for v in s.verdicts
           if v.answer_chars is not None and (p := s.preference(v)) is not None]
    return spearman([float(x) for x, _ in pts], [y for _, y in pts])


__all__ = ["final_attempts", "judge_summaries"]
