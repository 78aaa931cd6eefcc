"""``assay export``: the raw data of a run out, in a versioned schema (see assay.report.export)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def export(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl | csv | parquet")] = "jsonl",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Output file ('-' or none: standard output; parquet needs a file).")] = None,
    to: Annotated[str, typer.Option("--to", help="Export target (built in: file).")] = "file",
) -> None:
    """Export every attempt of a run as rows (schema assay.results/1): JSON Lines, CSV or Parquet."""
    from assay.cli.render import make_console
    from assay.report.export import ExportOptions, export_run

    message = export_run(run_dir, ExportOptions(fmt=fmt, out=out), to=to)
    if message:
        make_console(stderr=True).print(message, highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    app.command()(export)
