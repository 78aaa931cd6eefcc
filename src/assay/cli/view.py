"""``assay view [RUNS_DIR]``: the local web viewer over run directories (docs/view.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.errors import UsageError


def register(app: typer.Typer) -> None:
    @app.command("view")
    def view_cmd(
        runs_dir: Annotated[Path, typer.Argument(help="A folder of run directories, or one run directory.")] = Path("runs"),
        host: Annotated[str, typer.Option("--host", help="Address to bind (loopback by default; others need --token).")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="Port (0: any free one, printed).")] = 8765,
        token: Annotated[Optional[str], typer.Option("--token", envvar="ASSAY_VIEW_TOKEN",
                                                     help="Required to bind beyond loopback; given once as ?token=.")] = None,
    ) -> None:
        """Browse runs in a local web app: run list, live runs, trials, compare, the audit queue."""
        if not runs_dir.is_dir():
            raise UsageError(f"{runs_dir}: not a folder (fix: pass the folder holding your run directories)")
        if host not in ("127.0.0.1", "localhost", "::1") and not token:
            raise UsageError(f"--host {host}: binding beyond loopback needs --token (fix: --token SECRET)")
        from assay.view.app import serve

        serve(runs_dir, host=host, port=port, token=token)
