"""Evidence an attempt produces besides the verifier's verdict: stored outputs, incidents,
and the counts that go into the result. Plain functions over what the attempt collected."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from assay.agents.base import AgentOutcome
from assay.records.incident import Incident, incident
from assay.records.results import UsageTotals
from assay.spec.budget import Risk
from assay.spec.digest import workspace_hash_budget
from assay.spec.load import LoadedTask
from assay.store.rundir import RunDir, is_disk_full
from assay.store.workspace_diff import ARTIFACT_NAME as DIFF_ARTIFACT
from assay.spec.digest import UNHASHED, UNREADABLE
from assay.store.workspace_diff import Scan, build_workspace_diff, read_workspace_diff
from assay.store.hidden_sightings import ARTIFACT_NAME as HIDDEN_VALUES
from assay.store.hidden_sightings import encode as encode_sightings
from assay.run.hidden_values import answer_key, sightings
from assay.trace.redact import Redactor

def store_outputs(rd: RunDir, red: Redactor, outcome: AgentOutcome) -> dict[str, str]:
    """Redacted stdout/stderr and native session files, stored by digest: name -> digest."""
    artifacts: dict[str, str] = {}
    for name, data in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
        if data:
            artifacts[f"agent.{name}"] = rd.put_artifact(red.text(data.decode(errors="replace")).encode())
    for name, path in outcome.native_files.items():
        if path.is_file():
            artifacts[f"native.{name}"] = rd.put_artifact(red.text(path.read_text(errors="replace")).encode())
    return artifacts


def store_final_state(rd: RunDir, red: Redactor, task: LoadedTask, workspace: Path, initial: Scan,
                      outcome: AgentOutcome, *, disk_mb: int | None, now: Scan | None = None,
                      changed: frozenset[bytes] | None = None) -> dict[str, str]:
    """The final state is evidence too: the workspace diff against the scan taken after setup,
    and the agent's final answer (both redacted): name -> digest. ``disk_mb`` (the attempt's
    disk bound) sets how many bytes the scan of the hostile workspace reads; ``now``: that scan, if taken;
    ``changed``: the only names it can differ in (an overlay's upper), else every name is compared."""
    blob = build_workspace_diff(
        workspace, initial, before=task.dir / task.spec.workspace, hash_budget=workspace_hash_budget(disk_mb), now=now,
        changed=changed,
        redact=lambda b: red.text(b.decode("utf-8", "surrogateescape")).encode("utf-8", "surrogateescape"))
    artifacts = {DIFF_ARTIFACT: rd.put_artifact(blob)}
    try:  # the screen's evidence, from the one place that may read the answer key
        key = answer_key(task)
        found = sightings(read_workspace_diff(blob), key) if key else []
        if found:
            artifacts[HIDDEN_VALUES] = rd.put_artifact(encode_sightings(found))
    except Exception as e:  # noqa: BLE001 - the diff is kept; a check that failed is named, never silent
        if is_disk_full(e):
            raise
        artifacts[HIDDEN_VALUES] = rd.put_artifact(encode_sightings([], error=f"{type(e).__name__}: {e}"))
    if outcome.final_output:
        artifacts["agent.final_answer"] = rd.put_artifact(red.text(outcome.final_output).encode())
    return artifacts


def read_only_violation(task: LoadedTask, initial: dict[str, str], final: dict[str, str]) -> Incident | None:
    """The incident for a read-only task whose workspace changed beyond its declared outputs."""
    if task.spec.risk is not Risk.read_only or initial == final:
        return None
    changed = sorted(p for p in set(initial) | set(final) if (initial.get(p) != final.get(p) or _unknown(final.get(p)))
                     and not any(fnmatch.fnmatchcase(p, g) for g in task.spec.outputs))
    if not changed:
        return None
    return incident("read_only_write", "high", "the workspace of a read-only task was modified", paths=changed[:50])


def _unknown(digest: str | None) -> bool:
    """A digest that says nothing was read (unreadable, over a bound): never "unchanged"."""
    return digest is not None and (digest == UNREADABLE or digest.startswith(UNHASHED))


def add_usage(a: UsageTotals, b: UsageTotals) -> UsageTotals:
    return UsageTotals(**{k: getattr(a, k) + getattr(b, k) for k in UsageTotals.model_fields})
