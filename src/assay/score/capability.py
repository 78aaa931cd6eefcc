"""The four capability components, each computed from evidence, and their weighted sum.

Definitions (docs/scoring.md repeats them with examples):

- completion: the agent's macro strict success rate over categories (frozen weights), x100.
- tool & trajectory: mean over verdict trials that show any trajectory evidence of the mean of
  (a) the fraction of trajectory predicates that held, (b) 1 - tool error rate over tool
  results, (c) 1 - loops / tool calls. x100.
- reliability & recovery: mean of (a) consistency = macro over categories of the mean over
  tasks of pass^n (all n repetitions passed) and (b) recovery = share of verdict trials with an
  injected fault that still passed (only when faults were injected). x100.
- evidence & operability: mean over verdict trials of the mean of the applicable checks: trace
  complete (attempt started and ended recorded), model responses carrying usage, tool calls
  answered by a tool result, artifacts present in the store, cleanup clean. x100.

A component with no evidence at all is ``None`` and the capability score is the weighted mean of
the others (renormalised), with the missing components named, never silently zero.
"""

from __future__ import annotations

from typing import Any

from assay.score.trials import TrialFacts

COMPONENTS = ("completion", "tool_trajectory", "reliability_recovery", "evidence_operability")
DEFAULT_WEIGHTS = {"completion": 0.60, "tool_trajectory": 0.15, "reliability_recovery": 0.15,
                   "evidence_operability": 0.10}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def tool_trajectory_of(t: TrialFacts) -> float | None:
    """This trial's tool & trajectory figure in [0, 1], or None without any such evidence."""
    parts: list[float] = []
    if t.trajectory_total:
        parts.append(t.trajectory_held / t.trajectory_total)
    tr = t.trace
    if tr is not None:
        if tr.tool_results:
            parts.append(1 - tr.tool_errors / tr.tool_results)
        if tr.tool_calls:
            parts.append(max(0.0, 1 - tr.loops / tr.tool_calls))
    return _mean(parts)


def evidence_of(t: TrialFacts) -> float | None:
    """This trial's evidence & operability figure in [0, 1] (always has the artifact/cleanup checks)."""
    parts: list[float] = [1.0 if t.artifacts_ok else 0.0, 1.0 if t.cleanup_clean else 0.0]
    tr = t.trace
    if tr is not None:
        parts.append(1.0 if tr.complete else 0.0)
        if tr.model_responses:
            parts.append(tr.model_responses_with_usage / tr.model_responses)
        if tr.tool_calls:
            parts.append(min(1.0, tr.tool_calls_answered / tr.tool_calls))
    return _mean(parts)


def capability(components: dict[str, float | None], weights: dict[str, float]) -> dict[str, Any]:
    """Weighted capability score 0..100 over the components that have evidence."""
    present = {k: v for k, v in components.items() if v is not None and weights.get(k, 0) > 0}
    total = sum(weights[k] for k in present)
    score = sum(weights[k] * present[k] for k in present) / total if total > 0 else None
    return {
        "score": score,
        "components": {k: components.get(k) for k in COMPONENTS},
        "weights": {k: weights.get(k, 0.0) for k in COMPONENTS},
        "missing": [k for k in COMPONENTS if components.get(k) is None],
    }
