"""The record of every change made to a running run by `assay ctl` (or the viewer's buttons).

    RUN_DIR/control/0001-pause.json     who, when, what: {"command", "who", "ts", "before", "after", ...}
    RUN_DIR/control/0002-resume.json

The manifest is sealed before the first trial and never rewritten (law 4), so, like the run
budget's log, each change is one file written exclusively with its ledger line first: `assay
verify` checks it, the run digest covers it, and a second writer cannot replace it.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from assay.errors import IntegrityError
from assay.spec.digest import sha256_bytes
from assay.store.rundir import RunDir, write_exclusive

CONTROL_DIR = "control"
#: the commands a change can record (also the file names' suffixes)
COMMANDS = ("pause", "resume", "jobs", "requeue-infra", "stop")
_NAME = re.compile(r"^[0-9]{4}-[a-z-]+\.json$")


def read_changes(rd: RunDir) -> list[dict[str, Any]]:
    """Every recorded control change of the run, in order (a file that does not parse is damaged)."""
    d = rd.path / CONTROL_DIR
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.iterdir()):
        if not _NAME.match(p.name):
            continue
        try:
            out.append(json.loads(p.read_bytes()))
        except ValueError:
            raise IntegrityError(f"{p}: damaged control record; run `assay verify` on the run directory") from None
    return out


def append_change(rd: RunDir, command: str, who: str, data: dict[str, Any]) -> dict[str, Any]:
    """Write the next control change and seal it; returns it as written."""
    if command not in COMMANDS:
        raise ValueError(f"unknown control command {command!r}")
    d = rd.path / CONTROL_DIR
    n = len([p for p in d.iterdir() if _NAME.match(p.name)]) + 1 if d.is_dir() else 1
    rel = f"{CONTROL_DIR}/{n:04d}-{command}.json"
    entry = {"command": command, "who": who, "ts": time.time(), **data}
    raw = (json.dumps(entry, indent=2, sort_keys=True) + "\n").encode()
    write_exclusive(rd.path / rel, raw, before_link=lambda: rd._record(rel, sha256_bytes(raw)))
    return entry
