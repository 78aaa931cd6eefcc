"""The run budget's log in the run directory: one immutable file per event, sealed in the ledger.

    RUN_DIR/budget/0001-stopped.json    the run budget was reached: what was spent, what is pending
    RUN_DIR/budget/0002-changed.json    ``--resume`` with another limit: from, to
    RUN_DIR/budget/0003-judge.json      what the judge model's calls spent in one session of the run
                                        (they belong to no attempt; a resumed meter counts them)

The manifest is sealed when the run starts and never rewritten, so a limit changed on resume is
recorded here; the limit in force is the last ``changed`` one, else the manifest's. Each file
is written exclusively with its ledger line first (as results are), so `assay verify` checks it
and a second runner cannot overwrite it.
"""

from __future__ import annotations

import json
import time
from typing import Any

from assay.errors import IntegrityError
from assay.records.manifest import RunManifest
from assay.spec.digest import sha256_bytes
from assay.spec.run_budget import RunBudget
from assay.store.rundir import RunDir, write_exclusive

BUDGET_DIR = "budget"


def read_log(rd: RunDir) -> list[dict[str, Any]]:
    """Every budget event of the run, in order (a file that does not parse is damaged evidence)."""
    d = rd.path / BUDGET_DIR
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("[0-9]*.json")):
        try:
            out.append(json.loads(p.read_bytes()))
        except ValueError:
            raise IntegrityError(f"{p}: damaged run budget record; run `assay verify` on the run directory") from None
    return out


def append_event(rd: RunDir, event: str, data: dict[str, Any]) -> dict[str, Any]:
    """Write the next budget event (``stopped``, ``changed`` or ``judge``); returns it as written."""
    n = len(list((rd.path / BUDGET_DIR).glob("[0-9]*.json"))) + 1 if (rd.path / BUDGET_DIR).is_dir() else 1
    rel = f"{BUDGET_DIR}/{n:04d}-{event}.json"
    entry = {"event": event, "ts": time.time(), **data}
    raw = (json.dumps(entry, indent=2, sort_keys=True) + "\n").encode()
    write_exclusive(rd.path / rel, raw, before_link=lambda: rd._record(rel, sha256_bytes(raw)))
    return entry


def limits_in_force(rd: RunDir, manifest: RunManifest) -> RunBudget:
    """The run budget now: the last one a resume set, else the manifest's (none: unlimited)."""
    changed = [e for e in read_log(rd) if e.get("event") == "changed"]
    if changed:
        return RunBudget.model_validate(changed[-1]["to"])
    return manifest.run_budget.limits if manifest.run_budget is not None else RunBudget()


def last_stop(rd: RunDir) -> dict[str, Any] | None:
    """The last ``stopped`` event, if the run budget ever stopped this run."""
    stops = [e for e in read_log(rd) if e.get("event") == "stopped"]
    return stops[-1] if stops else None
