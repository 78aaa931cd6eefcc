"""``assay show RUN TRIAL --diff``: the final workspace of each attempt, as the harness kept it."""

from __future__ import annotations

import difflib

from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.sanitize import safe
from assay.errors import IntegrityError
from assay.store.rundir import RunDir
from assay.store.workspace_diff import ARTIFACT_NAME, WorkspaceDiff, read_workspace_diff
from assay.untrusted.archive import ArchiveError

#: lines of one file's content or line diff shown at most
MAX_LINES = 200


def show_diff(console: Console, rd: RunDir, trial_id: str, *, attempt: int | None = None) -> bool:
    """Print the workspace diff of every attempt (or one); False if the trial has no result."""
    results = [r for r in (rd.result(trial_id, n) for n in rd.attempts_of(trial_id)) if r is not None]
    if attempt is not None:
        results = [r for r in results if r.attempt == attempt]
    if not results:
        return False
    for r in results:
        console.rule(Text(f"{trial_id}  attempt {r.attempt}  workspace diff"))
        digest = r.artifacts.get(ARTIFACT_NAME)
        if digest is None:
            console.print("no workspace diff was kept for this attempt (skipped, or it ended before the agent ran)")
            continue
        path = rd.artifact_path(digest)
        try:
            diff = read_workspace_diff(path.read_bytes())
        except (OSError, ArchiveError, ValueError, KeyError) as e:
            raise IntegrityError(f"{path}: the workspace diff of {trial_id} attempt {r.attempt} cannot be read ({e}); "
                                 "run `assay verify`") from None
        _print_diff(console, diff)
    return True


def _print_diff(console: Console, diff: WorkspaceDiff) -> None:
    if not diff.entries:
        console.print("the workspace is unchanged")
    t = Table(title="files")
    for col in ("status", "path", "before", "after"):
        t.add_column(col, overflow="fold")
    for e in diff.entries:
        t.add_row(e["status"], safe(e["path"]), _side(e["before"]), _side(e["after"]))
    console.print(t)
    if diff.truncated:
        lim = diff.limits
        console.print(f"[yellow]truncated:[/] {diff.omitted_entries} entr(ies) left out; contents capped at "
                      f"{lim['max_file_bytes']} bytes per file and {lim['max_total_bytes']} in all")
    for e in diff.entries:
        after, before = diff.content(e, "after"), diff.content(e, "before")
        if after is None and before is None:
            continue
        console.rule(safe(f"{e['status']} {e['path']}"), style="dim")
        if after is not None and before is not None and _is_text(after) and _is_text(before):
            lines = list(difflib.unified_diff(before.decode().splitlines(), after.decode().splitlines(),
                                              "before", "after", lineterm=""))
        elif after is not None and _is_text(after):
            lines = after.decode().splitlines()
        elif after is None and before is not None and _is_text(before):
            lines = [f"- {ln}" for ln in before.decode().splitlines()]
        else:
            data = after if after is not None else before
            lines = [f"(binary, {len(data or b'')} bytes stored)"]
        console.print(safe("\n".join(lines[:MAX_LINES])), highlight=False)
        if len(lines) > MAX_LINES:
            console.print(f"[dim]... {len(lines) - MAX_LINES} more line(s)[/]")
        if e.get("after_truncated") or e.get("before_truncated"):
            console.print("[yellow]content truncated at the size cap[/]")


def _side(d: dict | None) -> Text:
    if d is None:
        return Text("-")
    if d["type"] == "file":
        return Text(f"{d['sha256'][:12]} ({d['size']} B)")
    if d["type"] == "symlink":
        return Text("link -> ") + safe(d["target"])
    return Text(d["type"])


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\x00" not in data
