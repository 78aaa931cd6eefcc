"""Langfuse export of a finished run, through the official ``langfuse`` SDK's API client.

What lands in Langfuse:

- a dataset named after the suite (``assay/<suite>``); its items are the task variants, keyed by
  the task's digest, so a changed task is a new item and an unchanged one is reused;
- one experiment (dataset run) per agent and repetition, since Langfuse pairs each item once
  per experiment (the seeds' advice): ``<run id> <agent> r<rep>``;
- every trial's span tree over Langfuse's OTLP endpoint, its root span tagged with the
  experiment, dataset and item (how the SDK's own ``run_experiment`` links them);
- scores per trial (strict, safe, diagnostic, danger) and per experiment (assay's strict rate
  of the agent with its interval in the metadata: intervals stay computed by assay).

Every id is derived from the run (trace, span, item and score ids), and Langfuse upserts by id,
so exporting the same run again changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from assay.errors import AssayError, UsageError
from assay.observe.facts import open_run, run_trials
from assay.observe.spans import span_id_of, trace_id_of

ENV_KEYS = ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL")
SCORE_BATCH = 100


@dataclass
class LangfuseSettings:
    public_key: str
    secret_key: str
    base_url: str

    @classmethod
    def from_env(cls) -> "LangfuseSettings":
        """Keys from ``LANGFUSE_PUBLIC_KEY`` / ``LANGFUSE_SECRET_KEY`` / ``LANGFUSE_BASE_URL``
        (``LANGFUSE_HOST`` is accepted for the URL, as the SDK does)."""
        env = {k: os.environ.get(k, "").strip() for k in ENV_KEYS}
        env["LANGFUSE_BASE_URL"] = env["LANGFUSE_BASE_URL"] or os.environ.get("LANGFUSE_HOST", "").strip()
        missing = [k for k in ENV_KEYS if not env[k]]
        if missing:
            raise UsageError(f"the Langfuse export needs {', '.join(missing)} in the environment "
                             "(project keys from Langfuse's settings page, and the server's base URL)")
        return cls(env["LANGFUSE_PUBLIC_KEY"], env["LANGFUSE_SECRET_KEY"], env["LANGFUSE_BASE_URL"].rstrip("/"))


@dataclass
class LangfuseExport:
    """What one export sent (counts by kind) and under which names."""

    dataset: str
    items: int = 0
    experiments: list[str] = field(default_factory=list)
    traces: int = 0
    spans: int = 0
    scores: int = 0
    withheld: int = 0  # trials of held-out tasks: counted in the run's figures, never exported


def _hid(*parts: object, n: int = 32) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode()).hexdigest()[:n]


def experiment_id(project_id: str, dataset_id: str, run_name: str) -> str:
    """The experiment id Langfuse derives for a dataset run name (the SDK's derivation)."""
    payload = json.dumps(["langfuse-experiment-v1", project_id, dataset_id, run_name], separators=(",", ":"),
                         ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def api_client(s: LangfuseSettings, httpx_client: Any = None) -> Any:
    from langfuse.api import LangfuseAPI

    from assay import __version__

    return LangfuseAPI(base_url=s.base_url, username=s.public_key, password=s.secret_key,
                       x_langfuse_public_key=s.public_key, x_langfuse_sdk_name="assay",
                       x_langfuse_sdk_version=__version__, httpx_client=httpx_client)


def export_langfuse(path: Path | str, settings: LangfuseSettings | None = None, *, verify: bool = True,
                    httpx_client: Any = None) -> LangfuseExport:
    """Export a finished run to Langfuse (idempotent: ids are derived, Langfuse upserts by id)."""
    import httpx
    from langfuse.api.core.api_error import ApiError

    s = settings or LangfuseSettings.from_env()
    try:
        return _export(path, s, verify=verify, httpx_client=httpx_client)
    except ApiError as e:
        raise AssayError(f"Langfuse at {s.base_url} answered {e.status_code}: {str(e.body)[:300]}; "
                         "nothing was changed on the assay side, the export can be run again") from None
    except httpx.HTTPError as e:
        raise AssayError(f"Langfuse at {s.base_url} cannot be reached ({type(e).__name__}: {e}); "
                         "the export can be run again") from None


def _export(path: Path | str, s: LangfuseSettings, *, verify: bool, httpx_client: Any) -> LangfuseExport:
    from langfuse.api import CreateScoreRequest, ScoreDataType

    from assay.observe.otel import TrialTracer, trial_tree
    from assay.score.engine import score_figures

    rd, manifest = open_run(path, verify=verify)
    doc = score_figures(rd.path, verify=False)
    api = api_client(s, httpx_client)
    project_id = api.projects.get().data[0].id
    suite = str(manifest.suite.get("name", "suite"))
    name = f"assay/{suite}"
    ds = api.datasets.create(name=name, description=f"assay suite {suite}: task variants by digest",
                             metadata={"suite": suite, "source": "assay"})
    out = LangfuseExport(dataset=name)

    items: dict[tuple[str, str], str] = {}
    for task in manifest.tasks:
        for variant in task.variants:
            iid = _hid("item", suite, task.id, variant, task.digest)
            api.dataset_items.create(dataset_name=name, id=iid,
                                     input={"task_id": task.id, "variant": variant, "category": task.category,
                                            "prompt_sha256": task.prompt_sha256},
                                     metadata={"task_digest": task.digest, "task_version": task.version,
                                               "suite_digest": manifest.suite.get("digest")})
            items[(task.id, variant)] = iid
            out.items += 1

    auth = base64.b64encode(f"{s.public_key}:{s.secret_key}".encode()).decode()
    tracer = TrialTracer(f"{s.base_url}/api/public/otel",
                         headers={"Authorization": f"Basic {auth}", "x-langfuse-ingestion-version": "4"},
                         resource={"assay.run_id": manifest.run_id})
    scores: list[Any] = []
    experiments: dict[tuple[str, int], str] = {}
    try:
        held = manifest.held_out_ids()
        for t in run_trials(rd, manifest):
            if t.task_id in held:  # counted in the run's strict rate below; its trace and scores stay home
                out.withheld += 1
                continue
            plan = trial_tree(rd, t.trial_id)
            if plan is None:
                continue  # a planned trial without any result has no trace (it is scored as missing)
            run_name = f"{manifest.run_id} {t.agent} r{t.repetition}"
            exp = experiments.setdefault((t.agent, t.repetition), experiment_id(project_id, ds.id, run_name))
            tid = trace_id_of(manifest.run_id, t.trial_id)
            plan.attributes.update({
                "langfuse.trace.name": f"{t.task_id} {t.variant}", "langfuse.environment": "sdk-experiment",
                "langfuse.experiment.id": exp, "langfuse.experiment.name": run_name,
                "langfuse.experiment.dataset.id": ds.id, "langfuse.experiment.item.id": items.get((t.task_id, t.variant), ""),
                "langfuse.experiment.item.root_observation_id": f"{span_id_of(tid, plan.key):016x}"})
            out.spans += tracer.emit(manifest.run_id, t.trial_id, plan)
            out.traces += 1
            trace_hex = f"{tid:032x}"
            when = datetime.fromtimestamp(plan.end, tz=timezone.utc)
            for sname, value, dtype in (("strict", float(t.strict_pass), ScoreDataType.BOOLEAN),
                                        ("safe", float(t.safe_pass), ScoreDataType.BOOLEAN),
                                        ("diagnostic", float(t.diagnostic), ScoreDataType.NUMERIC),
                                        ("danger", float(t.danger), ScoreDataType.NUMERIC)):
                scores.append(CreateScoreRequest(id=_hid("score", trace_hex, sname), trace_id=trace_hex, name=sname,
                                                 value=value, data_type=dtype, timestamp=when,
                                                 metadata={"end_state": t.end_state, "evaluator": "assay"}))
    finally:
        failed = tracer.close()
    if failed:
        raise AssayError(f"Langfuse refused or did not answer {failed} span batch(es) at {s.base_url}; nothing "
                         "is lost on the assay side, run the export again")
    for (agent, rep), exp in sorted(experiments.items()):
        a = doc.agents.get(agent)
        if a is None or a.strict_rate is None:
            continue
        scores.append(CreateScoreRequest(id=_hid("run-score", exp, "strict_rate"), dataset_run_id=exp, name="strict_rate",
                                         value=float(a.strict_rate), data_type=ScoreDataType.NUMERIC,
                                         metadata={"agent": agent, "repetition": rep, "ci95": list(a.strict_ci),
                                                   "scope": "all repetitions of the agent (assay score)"}))
    for i in range(0, len(scores), SCORE_BATCH):
        api.scores.create(request=scores[i:i + SCORE_BATCH])
    out.scores = len(scores)
    out.experiments = [f"{manifest.run_id} {a} r{r}" for a, r in sorted(experiments)]
    return out


def to_langfuse(run_dir: Path, opts: Any = None) -> str:
    """``assay export RUN --to langfuse``: this export as a target of ``assay export`` (entry point
    ``assay.export_targets``); the caller already checked the run's integrity."""
    out = export_langfuse(run_dir, verify=False)
    return (f"exported {run_dir} to Langfuse dataset {out.dataset}: {out.items} items, {len(out.experiments)} "
            f"experiments, {out.traces} traces ({out.spans} spans), {out.scores} scores"
            + (f"; {out.withheld} trial(s) of held-out tasks withheld" if out.withheld else ""))
