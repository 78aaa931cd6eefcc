"""``assay audit SUITE``: label every task (valid, weak, unsolvable as shipped, needs, no
reference solution) from its oracle, do-nothing and mutant runs; Markdown and JSON beside."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        suite: Annotated[Path, typer.Argument(help="Suite folder.")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for audit.md and audit.json.")] = Path("audit"),
        keep: Annotated[Optional[str], typer.Option("--keep", help="Labels to keep, comma-separated (e.g. valid): "
                                                    "write that subset as a new suite version in OUT/suite.")] = None,
        sandbox: Annotated[Optional[str], typer.Option("--sandbox", help="Sandbox backend.")] = None,
        jobs: Annotated[int, typer.Option("--jobs", "-j")] = 1,
    ) -> None:
        """Exit 1 when any task is not valid (the counts per label are printed)."""
        from assay.run.audit import LABELS, audit_suite, keep as keep_subset

        labels = {x.strip() for x in keep.split(",")} if keep else set()
        if labels - set(LABELS):
            raise UsageError(f"--keep {keep!r}: labels are {', '.join(LABELS)}")
        if out.exists() and any(out.iterdir()):
            raise UsageError(f"{out} is not empty; choose a new folder for the audit (--out)")
        report = audit_suite(suite, sandbox=sandbox, jobs=jobs)
        out.mkdir(parents=True, exist_ok=True)
        (out / "audit.json").write_text(report.to_json())
        (out / "audit.md").write_text(report.to_markdown())
        for t in report.tasks:
            typer.echo(f"{t.task_id}: {t.label}")
        typer.echo(", ".join(f"{k}: {v}" for k, v in report.counts().items()) + f" (report: {out / 'audit.md'})")
        if labels:
            kept = keep_subset(suite, report, labels, out / "suite")
            typer.echo(f"kept {len(kept)} task(s) in {out / 'suite'}" if kept else "no task to keep: nothing written")
        if any(t.label != "valid" for t in report.tasks):
            raise typer.Exit(1)
