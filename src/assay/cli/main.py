"""``assay``: the root command. Each area registers its commands from its own module
(``register(app)``), and every error is mapped to an exit code here, in one place."""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from assay._optional import optional_import
from assay.errors import AssayError, SpecError

app = typer.Typer(name="assay", help="Evaluate AI agents: versioned tasks, sandboxes, independent verifiers.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
err = Console(stderr=True)

#: command modules; each has ``register(app: typer.Typer) -> None``
COMMAND_MODULES = (
    "assay.cli.core",       # run, validate, show, schema, verify, index
    "assay.cli.sandbox",    # doctor
    "assay.cli.score",      # score, report, compare
    "assay.cli.agents",     # agents list/install
    "assay.cli.gateway",    # gateway serve
    "assay.cli.worlds",     # worlds/tools
    "assay.cli.judge",      # judge calibrate/status
    "assay.cli.k8s",        # k8s render
    "assay.cli.variants",   # variants generate/report
    "assay.cli.cases",      # import traces, cases review/promote/contamination
    "assay.cli.recovery",   # recovery figures
)


def _register() -> None:
    for name in COMMAND_MODULES:
        try:
            mod = optional_import(name)
        except Exception as e:  # noqa: BLE001 - one broken area must not take the other commands down
            err.print(f"[yellow]warning:[/] commands of {name} unavailable: {type(e).__name__}: {e}")
            continue
        if mod is not None:
            mod.register(app)


def report_error(e: AssayError) -> int:
    if isinstance(e, SpecError):
        err.print(f"[red]error:[/red] {len(e.problems)} problem(s) in the spec:", highlight=False)
        for p in e.problems:
            err.print(f"  - {p.render()}", highlight=False, markup=False)
    else:
        err.print(f"[red]error:[/red] {e}", highlight=False)
    return e.exit_code


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        rv = app(args=list(sys.argv[1:] if argv is None else argv), standalone_mode=False)
        code = rv if isinstance(rv, int) else 0
        if argv is None:
            sys.exit(code)
        return code
    except AssayError as e:
        code = report_error(e)
        if argv is None:
            sys.exit(code)
        return code
    except typer.Exit as e:
        if argv is None:
            sys.exit(e.exit_code)
        return e.exit_code
    except KeyboardInterrupt:
        err.print("interrupted; resume with `assay run --resume RUN_DIR`")
        if argv is None:
            sys.exit(130)
        return 130
    except Exception as e:  # click usage errors
        import click

        if isinstance(e, click.exceptions.ClickException):
            e.show()
            if argv is None:
                sys.exit(2)
            return 2
        raise
    return 0


if __name__ == "__main__":
    main()
