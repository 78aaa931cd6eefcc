"""``assay show RUN [TRIAL] --json``: the run's attempts as the export's rows (schema
``assay.results/1``, held-out tasks withheld the same way), so a script reads one shape."""

from __future__ import annotations

from typing import Any

from assay.errors import RunDirError
from assay.report.export import EXPORT_SCHEMA, iter_rows
from assay.store.rundir import RunDir


def show_json(rd: RunDir, trial: str | None) -> dict[str, Any]:
    m = rd.manifest()
    rows = list(iter_rows(rd.path))
    doc: dict[str, Any] = {"schema": EXPORT_SCHEMA, "run_id": m.run_id, "run_dir": str(rd.path)}
    if trial is None:
        return {**doc, "rows": rows}
    if trial.split(".", 1)[0] in m.held_out_ids():
        return {**doc, "trial_id": trial, "held_out": True, "rows": []}  # its evidence is its answer
    mine = [r for r in rows if r["trial_id"] == trial]
    if not mine:
        raise RunDirError(f"no trial {trial!r} in {rd.path} (`assay show RUN --json` lists them)")
    return {**doc, "trial_id": trial, "rows": mine}
