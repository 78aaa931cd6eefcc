"""``assay audit RUN_DIR``: the suspect passes of a run, with the screen's evidence, for a person
to label (parse arguments, call assay.score.screen)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("audit")
    def audit_cmd(
        run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
    ) -> None:
        """List the passes the reward-hack screen flags (suspect: still passes, shown with evidence)."""
        from assay.score.screen import as_records, screen_run
        from assay.store.rundir import RunDir

        if fmt not in ("text", "json"):
            raise UsageError(f"--format must be text or json, not {fmt!r}")
        suspects = screen_run(RunDir.open(run_dir))
        if fmt == "json":
            typer.echo(json.dumps(as_records(suspects), indent=1))
            return
        for s in suspects:
            typer.echo(f"suspect pass {s.trial_id} attempt {s.attempt} ({s.agent} on {s.task_id}):")
            for f in s.flags:
                typer.echo(f"  {f.rule}: {f.path}: {f.detail}")
        typer.echo(f"{len(suspects)} suspect pass(es)")
