"""``assay recovery RUN_DIR``: the recovery figures of a run (parse arguments, call assay.score.recovery_run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assay.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("recovery")
    def recovery_cmd(
        run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="md | json")] = "md",
    ) -> None:
        """Recovery under tool, process and model faults: recovered share, duplicate side effects, paired extra cost and time."""
        from assay.score.recovery_run import recovery_of_run, render_markdown

        if fmt not in ("md", "json"):
            raise UsageError(f"--format must be md or json, not {fmt!r}")
        fig = recovery_of_run(run_dir)
        typer.echo(render_markdown(fig) if fmt == "md" else json.dumps(fig.dump(), indent=1), nl=fmt == "json")
