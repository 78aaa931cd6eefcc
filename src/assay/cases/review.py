"""``assay cases review|promote``: a person accepts a candidate; promotion writes it into a suite.

Nothing is auto-accepted. Accepting binds the reviewer's name to the digest of the draft as it
is at that moment; a draft edited afterwards must be reviewed again before it can be promoted.
A draft that needs a person's hand (a free-text correction to apply, a missing prompt, no side
effect to expect) cannot be accepted while it is still exactly what the importer generated.
Promotion copies the draft into ``SUITE/tasks/<id>/`` with its provenance, bumps the suite
version, and checks the suite still loads; if it does not, everything is put back.
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from assay.cases.draft import DRAFT_CATEGORY, PROMPT_PLACEHOLDER
from assay.cases.store import CasesDir
from assay.errors import SpecError, UsageError
from assay.spec.digest import walk_files
from assay.spec.load import SUITE_FILE, TASK_FILE, load_suite, load_task
from assay.spec.task import check_id
from assay.untrusted.yaml_doc import load_yaml


def _no_links(draft: Path) -> None:
    """A person edits the draft: a symbolic link in it is refused, never followed into a suite."""
    links = [p for p in walk_files(draft) if p.is_symlink()]
    if links:
        raise UsageError(f"{links[0]}: the draft holds a symbolic link; replace it with a regular file")


def review(cases_dir: Path, cid: str, decision: str, by: str, note: str = "") -> dict[str, Any]:
    """Accept or reject a candidate; returns the updated candidate."""
    if decision not in ("accept", "reject"):
        raise UsageError(f"decision must be accept or reject, not {decision!r}")
    if not by.strip():
        raise UsageError("say who decides: --by NAME")
    cases = CasesDir(cases_dir)
    cand = cases.read(cid)
    if cand["status"] == "promoted":
        raise UsageError(f"candidate {cid} was already promoted to {cand['promotion']['suite']}; it cannot be reviewed again")
    digest = cases.draft_digest(cid)
    if decision == "accept":
        draft = cases.draft_dir(cid)
        _no_links(draft)
        load_task(draft)  # a draft that does not load cannot be accepted (SpecError names the field)
        if (draft / "prompt.md").read_text() == PROMPT_PLACEHOLDER:
            raise UsageError(f"{draft / 'prompt.md'}: still the placeholder; write the instruction first")
        if cand["todo"] and digest == cand["generated_draft_sha256"]:
            raise UsageError(f"candidate {cid} needs a person's edit before it can be accepted: "
                             + "; ".join(cand["todo"]) + f" (edit {draft})")
    cand["status"] = "accepted" if decision == "accept" else "rejected"
    cand["review"] = {"decision": decision, "by": by, "at": time.time(), "note": note, "draft_sha256": digest}
    cases.write(cand)
    cases.log("review", candidate=cid, decision=decision, by=by, note=note, draft_sha256=digest)
    return cand


def bump_version(version: str) -> str:
    """1.0.0 -> 1.0.1, 3 -> 4, 1.0-rc -> 1.0-rc.1: the last numeric component goes up by one."""
    m = re.match(r"^(.*?)(\d+)$", version)
    return f"{m.group(1)}{int(m.group(2)) + 1}" if m else f"{version}.1"


def _rewrite_suite(text: str, new_version: str, task_id: str, listed: bool) -> str:
    if listed:  # an explicit task list must name the new task: a YAML round trip (comments are lost)
        data = load_yaml(text)
        data["version"] = new_version
        data["tasks"] = [*data["tasks"], task_id]
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    out, n = re.subn(r"(?m)^version:.*$", f'version: "{new_version}"', text, count=1)
    if n != 1:
        raise UsageError("suite.yaml has no top-level 'version:' line to bump")
    return out


def promote(cases_dir: Path, cid: str, suite_dir: Path, *, task_id: str | None = None, category: str | None = None,
            held_out: bool = False) -> dict[str, Any]:
    """Write an accepted candidate into a suite as a new task; returns the promotion record."""
    cases = CasesDir(cases_dir)
    cand = cases.read(cid)
    if cand["status"] != "accepted":
        raise UsageError(f"candidate {cid} is {cand['status']}; a person must accept it first "
                         f"(`assay cases review {cases_dir} {cid} --accept --by NAME`)")
    if cases.draft_digest(cid) != cand["review"]["draft_sha256"]:
        raise UsageError(f"the draft of {cid} changed after it was accepted; review it again")
    suite = load_suite(suite_dir)
    tid = check_id(task_id or cid, "task id")
    dest = suite.root / suite.spec.tasks_dir / tid
    if dest.exists():
        raise UsageError(f"{dest} exists; choose another --task-id")
    raw = load_yaml((cases.draft_dir(cid) / TASK_FILE).read_text()) or {}
    raw["category"] = category or raw.get("category")
    if raw["category"] == DRAFT_CATEGORY and DRAFT_CATEGORY not in {c.id for c in suite.spec.categories}:
        raise UsageError(f"the draft has no category; give --category (one of {[c.id for c in suite.spec.categories]})")
    raw["description"] = str(raw.get("description", "")).replace("DRAFT from", "From")
    if held_out:
        raw["held_out"] = True
    old_version = suite.spec.version
    new_version = bump_version(old_version)
    record = {"candidate": cid, "sources": cand["sources"], "redaction": cand["redaction"],
              "correction": cand["correction"], "accepted_by": cand["review"]["by"],
              "accepted_at": cand["review"]["at"], "draft_sha256": cand["review"]["draft_sha256"],
              "suite": suite.spec.name, "suite_version": new_version, "previous_suite_version": old_version}
    raw["extra"] = {**(raw.get("extra") or {}), "provenance": record}
    _no_links(cases.draft_dir(cid))
    suite_file = suite.root / SUITE_FILE
    before = suite_file.read_bytes()
    shutil.copytree(cases.draft_dir(cid), dest, symlinks=False)
    try:
        (dest / TASK_FILE).write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))
        suite_file.write_text(_rewrite_suite(before.decode(), new_version, tid, suite.spec.tasks is not None))
        load_suite(suite.root)
    except (SpecError, UsageError, OSError, ValueError):
        shutil.rmtree(dest, ignore_errors=True)
        suite_file.write_bytes(before)
        raise
    promotion = {**record, "task_id": tid, "path": str(dest), "at": time.time()}
    cand["status"] = "promoted"
    cand["promotion"] = promotion
    cases.write(cand)
    cases.log("promote", candidate=cid, suite=str(suite.root), task_id=tid, suite_version=new_version)
    return promotion
