"""``assay ctl RUN pause|resume|jobs N|requeue-infra|stop|status``: steer a running run.

The command sends one control request to the run's runner (:mod:`assay.store.control_client`)
and prints what changed; the runner records each change in ``RUN/control/`` (who, when, what),
sealed in the ledger. A run with no runner is refused with how to resume it (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from assay.errors import UsageError

VERBS = ("pause", "resume", "jobs", "requeue-infra", "stop", "status")


def register(app: typer.Typer) -> None:
    @app.command("ctl")
    def ctl_cmd(
        run_dir: Annotated[Path, typer.Argument(help="The run directory of a running run.")],
        verb: Annotated[str, typer.Argument(help="pause | resume | jobs | requeue-infra | stop | status")],
        n: Annotated[Optional[int], typer.Argument(help="jobs: how many attempts at once from now on.")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the runner's answer as JSON.")] = False,
    ) -> None:
        """Steer a running run: pause, resume, jobs N, requeue-infra, stop (each change recorded)."""
        from assay.store.control_client import request

        if verb not in VERBS:
            raise UsageError(f"assay ctl: unknown command {verb!r} (fix: one of {', '.join(VERBS)})")
        if (verb == "jobs") != (n is not None):
            raise UsageError("assay ctl RUN jobs N takes a number, and only jobs does (fix: e.g. `assay ctl RUN jobs 4`)")
        answer = request(run_dir, verb, **({"n": n} if n is not None else {}))
        if not answer.get("ok"):
            raise UsageError(f"{run_dir}: the runner refused {verb}: {answer.get('error')}")
        if as_json:
            typer.echo(json.dumps(answer, indent=1, sort_keys=True))
            return
        change = answer.get("change")
        if change is not None:
            extra = f" ({len(change.get('trials', []))} trial(s) requeued)" if verb == "requeue-infra" else ""
            typer.echo(f"{verb}{extra}: recorded by {change['who']}")
        state = "stopping" if answer.get("stopped") else "paused" if answer.get("paused") else "running"
        typer.echo(f"{answer.get('run_id')}: {state}, jobs {answer.get('jobs')}, in flight {answer.get('in_flight')}, "
                   f"pending {answer.get('pending')} of {answer.get('planned')}")
