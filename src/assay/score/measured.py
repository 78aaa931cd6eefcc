"""The scorer's boundary: what was measured, and the aggregator's plain output made a typed document.

The aggregator works on plain containers for speed; everything downstream (report, CLI, CI
outputs) reads the frozen :class:`~assay.records.scores.ScoreDocument` built here. Two rules are
applied on the way, so every reader gets them from one place: an interval over zero scored trials
is null (never the vacuous [0, 1]), and an availability over zero scored trials is null (never
"100 %").
"""

from __future__ import annotations

from typing import Any

from assay.records.manifest import RunManifest
from assay.records.scores import NO_INTERVAL, Measured, ScoreDocument

SCRIPTED_FLAG = ("scripted model: this measures the harness and the agent's plumbing, "
                 "not model capability")
REPLAY_FLAG = "replayed model: recorded responses are played back; this is not a live model's capability"
INCOMPLETE_FLAG = ("INCOMPLETE: the run budget stopped this run; {n} planned trial(s) did not finish (reason "
                   "run_budget, scored as not passed); `assay run --resume RUN_DIR --max-cost HIGHER` continues it")
CONTENDED_FLAG = ("HOST CONTENDED: {n} timeout(s) were taken while the host was overloaded (CPU pressure or "
                  "load, recorded per attempt); they measure the host as much as the agent: rerun them with "
                  "fewer --jobs (trials flagged host_contended)")
EXCLUDED_FLAG = ("SUBSET: {n} task(s) of the suite were left out of this run by --exclude ({ids}); every "
                 "figure covers the other tasks only")
NOMINAL_FLAG = "nominal prices: cost figures exercise the accounting, they are not real spend"


def measured_of(manifest: RunManifest, *, incomplete: int = 0, contended: int = 0) -> dict[str, Any]:
    """Gateway backend and model id, sandbox, track and price table of a run, with the flags a
    reader must see beside its scores (``incomplete``: trials the run budget left unfinished)."""
    gw, sb = manifest.gateway, manifest.sandbox
    prices = gw.prices or {}
    nominal = any(isinstance(p, dict) and p.get("nominal") for p in prices.values())
    flags = []
    if gw.backend == "scripted":
        flags.append(SCRIPTED_FLAG)
    elif gw.backend == "replay":
        flags.append(REPLAY_FLAG)
    if nominal:
        flags.append(NOMINAL_FLAG)
    if manifest.plan.excluded:
        ids = manifest.plan.excluded
        flags.append(EXCLUDED_FLAG.format(n=len(ids), ids=", ".join(ids[:10]) + (" ..." if len(ids) > 10 else "")))
    if incomplete:
        flags.append(INCOMPLETE_FLAG.format(n=incomplete))
    if contended:
        flags.append(CONTENDED_FLAG.format(n=contended))
    return Measured(
        gateway_backend=gw.backend, model=gw.model, sandbox=sb.backend, network=sb.network.value,
        track=manifest.track, prices="nominal" if nominal else ("table" if prices else "none"),
        agents=[f"{a.name} {a.version}" if a.version else a.name for a in manifest.agents], flags=flags,
    ).dump()


def _null_interval(row: dict[str, Any], n_key: str, ci_key: str) -> None:
    if not row.get(n_key):
        row[ci_key] = list(NO_INTERVAL)


def typed_document(manifest: RunManifest, raw: dict[str, Any]) -> ScoreDocument:
    """Apply the boundary rules to the aggregator's output and validate it into the typed document."""
    digests = {t.id: t.digest for t in manifest.tasks}
    for row in raw["tasks"]:
        _null_interval(row, "n", "strict_ci")
        row["task_digest"] = digests.get(row["task"])
    for agent in raw["agents"].values():
        _null_interval(agent, "scored", "strict_ci_micro")
        if not agent["scored"]:
            agent["availability"]["rate"] = None
        for cat in agent["categories"].values():
            _null_interval(cat, "n", "strict_ci")
    return ScoreDocument.model_validate(raw)
