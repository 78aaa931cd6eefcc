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
        label: Annotated[list[str], typer.Option("--label", help="TRIAL_ID=true|false: a person's verdict on a "
                                                 "suspect pass (repeatable); writes a label file and a new score version")] = [],
        by: Annotated[str, typer.Option("--by", help="Who labels (recorded with the labels).")] = "",
    ) -> None:
        """List the passes the reward-hack screen flags (suspect: still passes, shown with evidence)."""
        from assay.score.labels import write_labels
        from assay.score.screen import as_records, screen_run
        from assay.score.versions import write_score
        from assay.store.rundir import RunDir

        if fmt not in ("text", "json"):
            raise UsageError(f"--format must be text or json, not {fmt!r}")
        suspects = screen_run(RunDir.open(run_dir))
        if label:
            known = {s.trial_id for s in suspects}
            parsed: dict[str, bool] = {}
            for item in label:
                tid, _, value = item.partition("=")
                if tid not in known or value not in ("true", "false"):
                    raise UsageError(f"--label {item!r}: expected SUSPECT_TRIAL_ID=true|false; suspects: {sorted(known)}")
                parsed[tid] = value == "true"
            if not by:
                raise UsageError("--label needs --by NAME (who labels is recorded with the labels)")
            written = write_labels(run_dir, parsed, by=by)
            typer.echo(f"labels written to {written}; new score version {write_score(run_dir)}")
            return
        if fmt == "json":
            typer.echo(json.dumps(as_records(suspects), indent=1))
            return
        for s in suspects:
            typer.echo(f"suspect pass {s.trial_id} attempt {s.attempt} ({s.agent} on {s.task_id}):")
            for f in s.flags:
                typer.echo(f"  {f.rule}: {f.path}: {f.detail}")
        typer.echo(f"{len(suspects)} suspect pass(es)")
