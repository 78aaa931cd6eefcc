"""Commands over what a run left and what a suite ships: show, schema, verify, pack, index."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.cli.console import make_console
from assay.cli.core import JsonOpt
from assay.errors import RunDirError, UsageError

# what a command does is imported inside it: `assay COMMAND --help` needs only the signatures above
out = make_console()


def show(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    trial: Annotated[Optional[str], typer.Argument(help="A trial id to show in full.")] = None,
    events: Annotated[int, typer.Option(help="Maximum trace events shown.")] = 200,
    diff: Annotated[bool, typer.Option("--diff", help="Show the files each attempt added, changed and deleted.")] = False,
    attempt: Annotated[Optional[int], typer.Option(help="Only this attempt (with --diff).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show a run's results, or one trial's evidence."""
    from assay.cli.diffview import show_diff
    from assay.cli.render import checked_summary, integrity_warning, show_run, show_trial
    from assay.errors import IntegrityError
    from assay.store.integrity import verify_run
    from assay.store.rundir import RunDir

    rd = RunDir.open(run_dir)
    if trial is None and diff:
        raise UsageError("--diff shows one trial: give its id (`assay show RUN` lists them)")
    # the forensic view shows an edited run too, but says so first and exits as `verify` does; each
    # view checks the run in the pass that reads it (the run's rows, its summary), one trial's in full
    summary = None
    if as_json:
        from assay.cli.show_json import show_json

        doc, problems = show_json(rd, trial)
    elif trial is None:
        summary, problems = checked_summary(rd)
    else:
        problems = verify_run(rd.path).problems
    edited = IntegrityError(f"{rd.path}: the run directory fails its integrity check ({len(problems)} problem(s)); "
                            "what was shown is what is on disk now (`assay verify` lists every problem)")
    if as_json:
        print(json.dumps({**doc, "integrity": {"ok": not problems, "problems": problems}}, indent=1))
        if problems:
            raise edited
        return
    if problems:
        integrity_warning(out, rd.path, problems)
    if trial is None:
        show_run(out, rd, intact=not problems, summary=summary)
        if problems:
            raise edited
        return
    held = trial.split(".", 1)[0] in rd.manifest().held_out_ids()  # a held-out task's diff is its answer
    shown = show_diff(out, rd, trial, attempt=attempt) if diff and not held else show_trial(out, rd, trial,
                                                                                           events_limit=events)
    if not shown:
        known = sorted(p.name for p in (rd.path / "trials").iterdir()) if (rd.path / "trials").is_dir() else []
        raise RunDirError(f"no trial {trial!r} in {rd.path}; trials: {', '.join(known[:20])}{' ...' if len(known) > 20 else ''}")
    if problems:
        raise edited


def schema(document: Annotated[str, typer.Argument(help="task | suite | manifest | result | score | compare | report")] = "task") -> None:
    """Print the JSON Schema of a file kind (for editors and validators) or of a document assay writes."""
    from assay.records.schema import DOCUMENTS, json_schema

    if document not in DOCUMENTS:
        raise UsageError(f"unknown document {document!r}; choose one of {', '.join(DOCUMENTS)}")
    print(json.dumps(json_schema(document), indent=2))


def _image_problems(run_dir: Path) -> list[str]:
    """The task images the manifest names, checked against the local image store (an image not
    in this store is said, not counted: docs/environments.md)."""
    from rich.markup import escape

    from assay.environments.check import verify_manifest_images
    from assay.store.rundir import RunDir

    try:
        tasks = RunDir.open(run_dir).manifest().tasks
    except Exception:  # noqa: BLE001 - verify_run has reported the unreadable manifest already
        return []
    envs = {t.id: (t.environment.image, t.environment.rootfs_sha256) for t in tasks if t.environment is not None}
    if not envs:
        return []
    problems, notes = verify_manifest_images(envs)
    for n in notes:
        out.print(f"note: {escape(n)}", highlight=False, soft_wrap=True)
    if not problems:
        out.print(f"ok: {len(envs)} task image(s) match their recorded root filesystem digests", highlight=False)
    return problems


def verify(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    expect: Annotated[Optional[str], typer.Option(help="The run digest recorded earlier; any difference fails (exit 3).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Recompute every digest of a run directory and report files changed after the run."""
    from rich.markup import escape

    from assay.store.integrity import verify_run

    report = verify_run(run_dir, expect=expect)
    report.problems += _image_problems(run_dir)
    if as_json:
        print(json.dumps({"ok": report.ok, "checked": report.checked, "digest": report.digest,
                          "problems": report.problems}, indent=1))
        if not report.ok:
            raise typer.Exit(3)
        return
    for p in report.problems:
        out.print(f"[red]CHANGED[/] {escape(p)}", highlight=False, soft_wrap=True)
    out.print(f"run digest: {report.digest}", highlight=False, soft_wrap=True)
    if not report.ok:
        out.print(f"{len(report.problems)} problem(s) in {report.checked} checked file(s)")
        raise typer.Exit(3)
    out.print(f"ok: {report.checked} file(s) match their recorded digests"
              + (" and the run digest is the one expected" if expect else ""))


def pack(
    suite: Annotated[Path, typer.Argument(help="Suite folder.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Package file to write (or a folder: named by digest).")],
) -> None:
    """Write a content-addressed suite package; `assay run FILE --expect-digest D` runs exactly it."""
    from assay.spec.pack import pack_suite

    res = pack_suite(suite, output)
    out.print(f"packed {res.files} file(s), {res.size} bytes: {res.path}", highlight=False, soft_wrap=True)
    out.print(f"suite digest: {res.digest}", highlight=False, soft_wrap=True)


def index(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    sql: Annotated[Optional[str], typer.Option(help="Query the index (read-only SQL).")] = None,
) -> None:
    """(Re)build the derived SQLite index of a run, or query it."""
    from rich.table import Table

    from assay.store.index import build_index, query

    if sql is None:
        path = build_index(run_dir)
        out.print(f"index rebuilt: {path}")
        return
    cols, rows = query(run_dir, sql)
    t = Table(*cols)
    for row in rows:
        t.add_row(*(str(x) for x in row))
    out.print(t)


def register(app: typer.Typer) -> None:
    app.command()(show)
    app.command()(schema)
    app.command()(verify)
    app.command()(pack)
    app.command()(index)
