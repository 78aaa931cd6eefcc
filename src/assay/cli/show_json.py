"""``assay show RUN [TRIAL] --json``: the run's attempts as the export's rows (schema
``assay.results/1``, held-out tasks withheld the same way), so a script reads one shape."""

from __future__ import annotations

from typing import Any

from assay.errors import RunDirError
from assay.report.export import EXPORT_SCHEMA, iter_rows
from assay.store.rundir import RunDir
from assay.store.scan import RunScan


def show_json(rd: RunDir, trial: str | None) -> tuple[dict[str, Any], list[str]]:
    """The document, and the run's integrity problems as `assay verify` lists them (checked in the
    pass that reads the rows, as `assay export` checks)."""
    m = rd.manifest()
    scan = RunScan(rd, verify=True)
    rows = list(iter_rows(rd.path, scan))
    problems = scan.finish()[1]
    doc: dict[str, Any] = {"schema": EXPORT_SCHEMA, "run_id": m.run_id, "run_dir": str(rd.path)}
    if trial is None:
        return {**doc, "rows": rows}, problems
    if trial.split(".", 1)[0] in m.held_out_ids():
        return {**doc, "trial_id": trial, "held_out": True, "rows": []}, problems  # its evidence is its answer
    mine = [r for r in rows if r["trial_id"] == trial]
    if not mine:
        raise RunDirError(f"no trial {trial!r} in {rd.path} (`assay show RUN --json` lists them)")
    return {**doc, "trial_id": trial, "rows": mine}, problems
