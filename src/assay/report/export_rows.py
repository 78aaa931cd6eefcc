"""An export's rows (``assay.results/1``): one attempt's row, a trial's rows, every row of a run
as its scan reads it, and the JSON Lines and CSV writers. Shared by the exporting process and the
child that writes a large run's rows beside the scan (report/export_child.py): one place where
a row is made."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

import msgspec

from assay.records.results import END_STATE_VALUE, AttemptResult
from assay.report.heldout import withhold_row
from assay.store.rundir import RunDir
from assay.store.scan import RunScan
from assay.store.trial_order import has_repeats

EXPORT_SCHEMA = "assay.results/1"
#: the JSON Lines writer's encoder (compact UTF-8)
_ENCODER = msgspec.json.Encoder()

#: column -> (type, meaning); the documented schema (docs/cli.md "assay export"), in column order
COLUMNS: dict[str, tuple[str, str]] = {
    "schema": ("str", f"always {EXPORT_SCHEMA!r}"),
    "run_id": ("str", "the run"),
    "trial_id": ("str", "task.variant.agent.rN"),
    "task_id": ("str", "task id"),
    "task_digest": ("str?", "digest of the task folder (from the manifest)"),
    "category": ("str", "task category"),
    "variant": ("str", "task variant"),
    "agent": ("str", "agent name"),
    "repetition": ("int", "repetition number (1-based)"),
    "attempt": ("int", "attempt number (1-based; 0 = planned, no result)"),
    "final": ("bool", "this attempt is the trial's result (the highest attempt number)"),
    "end_state": ("str", "pass | fail | timeout | infra_error | skipped"),
    "reason": ("str?", "why (skip reason, infra class, missing, ...)"),
    "retryable": ("bool", "a classified infrastructure error that allowed a retry"),
    "partial": ("bool", "the runner died during this attempt"),
    "strict_pass": ("bool", "end_state is pass (only the verifier decides)"),
    "diagnostic_score": ("float", "0-100, weighted predicates"),
    "predicates_total": ("int", "predicates evaluated"),
    "predicates_held": ("int", "predicates that held"),
    "wall_s": ("float", "wall time of the attempt"),
    "agent_s": ("float", "time in the agent"),
    "model_calls": ("int", "model calls through the gateway"),
    "input_tokens": ("int", "input tokens"),
    "output_tokens": ("int", "output tokens"),
    "cost_usd": ("float", "model cost (by the run's price table)"),
    "tool_calls": ("int", "tool calls"),
    "interventions": ("int", "human interventions (approvals asked)"),
    "incidents": ("int", "incidents recorded"),
    "incident_types": ("str", "their types, ';'-separated"),
    "gateway_backend": ("str?", "scripted | replay | upstream | local; empty when unused"),
    "model": ("str?", "model id"),
    "sandbox": ("str", "sandbox backend"),
    "track": ("str", "controlled | native"),
}


def _row(r: AttemptResult, final: bool, common: dict[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    """One attempt's row (at 10^6 rows each step counts: the end state's value from a table, not
    the enum's property; no generator over an empty list of predicates or incidents)."""
    preds, incidents, usage = r.predicates, r.incidents, r.usage
    return {"schema": EXPORT_SCHEMA, "run_id": r.run_id, "trial_id": r.trial_id, "task_id": r.task_id,
            "task_digest": digests.get(r.task_id), "category": r.category, "variant": r.variant, "agent": r.agent,
            "repetition": r.repetition, "attempt": r.attempt, "final": final,
            "end_state": END_STATE_VALUE[r.end_state],
            "reason": r.reason, "retryable": r.retryable, "partial": r.partial, "strict_pass": r.strict_pass,
            "diagnostic_score": r.diagnostic_score, "predicates_total": len(preds),
            "predicates_held": sum(p.passed for p in preds) if preds else 0, "wall_s": r.timings.wall_s,
            "agent_s": r.timings.agent_s, "model_calls": usage.model_calls, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens, "cost_usd": usage.cost_usd, "tool_calls": usage.tool_calls,
            "interventions": usage.interventions, "incidents": len(incidents),
            "incident_types": ";".join(i.type for i in incidents) if incidents else "", **common}


def _missing_row(run_id: str, trial_id: str, common: dict[str, Any], digests: dict[str, str],
                 categories: dict[str, str]) -> dict[str, Any]:
    from assay.score.trials import missing_trial

    t = missing_trial(trial_id, categories)
    row = {c: None for c in COLUMNS}
    row.update({"schema": EXPORT_SCHEMA, "run_id": run_id, "trial_id": trial_id, "task_id": t.task_id,
                "task_digest": digests.get(t.task_id), "category": t.category, "variant": t.variant,
                "agent": t.agent, "repetition": t.repetition, "attempt": 0, "final": True,
                "end_state": t.end_state, "reason": t.reason, "retryable": False, "partial": False,
                "strict_pass": False, "diagnostic_score": 0.0, "predicates_total": 0, "predicates_held": 0,
                "wall_s": 0.0, "agent_s": 0.0, "model_calls": 0, "input_tokens": 0, "output_tokens": 0,
                "cost_usd": 0.0, "tool_calls": 0, "interventions": 0, "incidents": 0, "incident_types": "", **common})
    return row


@dataclass(frozen=True)
class RowContext:
    """What every row of one run shares, from its manifest: plain data (the process writing the
    rows of a large export is handed it whole, never reading the manifest itself)."""

    run_id: str
    common: dict[str, Any]
    digests: dict[str, str]
    categories: dict[str, str]
    held: frozenset[str]


def row_context(rd: RunDir) -> tuple[RowContext, list[str]]:
    """The rows' shared context and the planned trials, in plan order without repeats."""
    m = rd.manifest()
    common = {"gateway_backend": m.gateway.backend, "model": m.gateway.model, "sandbox": m.sandbox.backend,
              "track": m.track}
    ctx = RowContext(m.run_id, common, {t.id: t.digest for t in m.tasks}, {t.id: t.category for t in m.tasks},
                     m.held_out_ids())  # counted rows; a held-out task's ids shown as digests
    planned = list(dict.fromkeys(m.plan.trials)) if has_repeats(m.plan.trials) else m.plan.trials
    return ctx, planned


def trial_rows(ctx: RowContext, tid: str, results: list[AttemptResult]) -> Iterator[dict[str, Any]]:
    """One trial's rows: each attempt in order (``final`` the last), or the missing row."""
    if not results:
        yield withhold_row(_missing_row(ctx.run_id, tid, ctx.common, ctx.digests, ctx.categories), ctx.held)
        return
    last = max(r.attempt for r in results)
    for r in sorted(results, key=lambda r: r.attempt):
        yield withhold_row(_row(r, r.attempt == last, ctx.common, ctx.digests), ctx.held)


def iter_rows(run_dir: Path | str, scan: RunScan | None = None) -> Iterator[dict[str, Any]]:
    """Every attempt of the run as a row (plan order, then unplanned trials found on disk), its
    result read by the scorer's reader (msgspec, pydantic for what it refuses: the same values as
    :meth:`RunDir.result`) through the scan's reading, spread over processes for a large run.
    With a checking ``scan``, each trial folder is checked as it is read; the caller asks its
    :meth:`~assay.store.scan.RunScan.finish` for the problems before it keeps any row."""
    rd = RunDir.open(run_dir)
    ctx, planned = row_context(rd)
    return rows_of(scan or RunScan(rd, verify=False), planned, ctx)


def rows_of(scan: RunScan, planned: list[str], ctx: RowContext) -> Iterator[dict[str, Any]]:
    """The rows of every trial the scan reads, planned first (:meth:`RunScan.read_in_order`)."""
    for tid, read in scan.read_in_order(planned):
        yield from trial_rows(ctx, tid, read.attempts if read is not None else [])


def _jsonl(rows: Iterator[dict[str, Any]], out: BinaryIO) -> None:
    """Compact UTF-8 JSON, a row a line (msgspec: a tenth of ``json.dumps``'s time at 10^6 rows;
    floats in their shortest round-trip form, NaN as null), written a MiB at a time."""
    encode, buf = _ENCODER.encode_into, bytearray()
    for row in rows:
        encode(row, buf, -1)
        buf += b"\n"
        if len(buf) > 1 << 20:
            out.write(buf)
            buf.clear()
    out.write(buf)


def _csv(rows: Iterator[dict[str, Any]], out: io.TextIOBase) -> None:
    w = csv.DictWriter(out, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: "" if v is None else v for k, v in row.items()})


def write_rows(rows: Iterator[dict[str, Any]], path: Path | str, fmt: str) -> None:
    """Rows to a new file in ``fmt`` (``jsonl`` or ``csv``): the one writer of an export's file,
    in the exporting process or its child."""
    if fmt == "jsonl":
        with open(path, "wb") as fb:
            _jsonl(rows, fb)
    else:
        with open(path, "w", encoding="utf-8", newline="") as f:
            _csv(rows, f)  # type: ignore[arg-type]
