"""What a suite exposes to the agent, on the terminal: ``assay lint`` (static, :mod:`assay.verify.lint`)
and ``assay validate --exposure`` (a probe in the real sandboxes, :mod:`assay.run.exposure`), a line
per finding naming the path."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assay.cli.console import make_console
from assay.errors import UsageError

if TYPE_CHECKING:
    from assay.run.exposure import ExposureReport

out = make_console()


def lint(suite: Annotated[Path, typer.Argument(help="Suite folder.")]) -> None:
    """Check statically what each task exposes to the agent (git history beyond the base commit,
    hidden values in its reach, verifier programs it can plant, tests in its workspace,
    credentials in the prompt): exit 1 on any finding the task does not declare intended."""
    from assay.spec.load import load_suite
    from assay.verify.lint import lint_suite

    findings = lint_suite(load_suite(suite))
    for f in findings:
        out.print(("[yellow]intended[/] " if not f.error else "[red]error[/] ") + f.line(), highlight=False)
    errors = [f for f in findings if f.error]
    if errors:
        out.print(f"{len(errors)} lint error(s)")
        raise typer.Exit(1)
    out.print(f"no lint errors ({len(findings)} intended finding(s))")


def show_exposure(suite: Path, *, sandbox: str | None, jobs: int, quiet: bool = False) -> ExposureReport:
    """Run the exposure audit and (unless ``quiet``) print what it found."""
    from assay.run.exposure import audit_exposure
    from assay.sandbox.registry import default_backend_name, get_backend

    name = sandbox or default_backend_name()
    if not get_backend(name).isolated:
        raise UsageError(f"--exposure needs an isolated sandbox: {name!r} shows the agent the whole host "
                         "(fix: install bubblewrap, or pass --sandbox bwrap)")
    rep = audit_exposure(suite, sandbox=name, jobs=jobs)
    if quiet:
        return rep
    agents = sorted({a for _, _, a in rep.audited})
    out.print(f"exposure: {len(rep.audited)} sandbox(es) probed as {', '.join(agents) or 'no agent'}", highlight=False)
    for note in rep.not_audited:
        out.print(f"[yellow]exposure[/]: {note}", highlight=False)
    for leak in rep.leaks:
        out.print(f"[red]LEAK[/] {leak.line()}", highlight=False)
    if not rep.audited:
        out.print("[red]exposure[/]: no probe ran, so nothing was shown to be private", highlight=False)
    elif not rep.leaks:
        out.print("exposure: nothing of the tasks, the run directory or the scratch was reachable", highlight=False)
    return rep


def register(app: typer.Typer) -> None:
    app.command()(lint)
