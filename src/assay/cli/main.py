"""``assay``: the root command. Each area registers its commands from its own module
(``register(app)``), and every error is mapped to an exit code here, in one place."""

from __future__ import annotations

import importlib
import sys

import typer
from rich.console import Console
from rich.markup import escape

from assay._optional import optional_import
from assay.errors import EXIT_CODES, AssayError, SpecError, Verdict

app = typer.Typer(name="assay", help="Evaluate AI agents: versioned tasks, sandboxes, independent verifiers.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
#: one line per problem on stderr: never wrapped, whatever the terminal width
err = Console(stderr=True, soft_wrap=True)

#: command modules; each has ``register(app: typer.Typer) -> None``
COMMAND_MODULES = (
    "assay.cli.core",       # run, validate, show, schema, verify, index
    "assay.cli.audit",      # audit
    "assay.cli.sandbox",    # doctor
    "assay.cli.score",      # score, report, compare
    "assay.cli.export",     # export
    "assay.cli.agents",     # agents list/install
    "assay.cli.gateway",    # gateway serve
    "assay.cli.worlds",     # worlds/tools
    "assay.cli.judge",      # judge calibrate/status
    "assay.cli.k8s",        # k8s render
    "assay.cli.observe",    # metrics, dashboard, export-otlp, export-langfuse
    "assay.cli.variants",   # variants generate/report
    "assay.cli.cases",      # import traces, cases review/promote/contamination
    "assay.cli.recovery",   # recovery figures
    "assay.cli.environments",  # env build/list/show/prune/export
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


def _usage_exceptions() -> tuple[type[BaseException], ...]:
    """Click's usage errors: typer >= 0.29 carries its own copy of click, older ones use click."""
    kinds: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            kinds.append(importlib.import_module(module).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(kinds)


def _interrupted() -> None:
    from assay.cli.outcome import resume_hint

    err.print(resume_hint(), markup=False, highlight=False)


def report_error(e: AssayError) -> int:
    if isinstance(e, SpecError):
        err.print(f"[red]error:[/red] {len(e.problems)} problem(s) in the spec:", highlight=False)
        for p in e.problems:
            err.print(f"  - {p.render()}", highlight=False, markup=False)
    elif isinstance(e, Verdict):
        err.print(f"{e.label}: {e}", highlight=False, markup=False)
    else:
        lines = str(e).splitlines() or [""]
        err.print(f"[red]error:[/red] {escape(lines[0])}", highlight=False)
        for line in lines[1:]:
            err.print(line, highlight=False, markup=False)
    return e.exit_code


def main(argv: list[str] | None = None) -> int:
    _register()
    try:
        rv = app(args=list(sys.argv[1:] if argv is None else argv), standalone_mode=False)
        code = rv if isinstance(rv, int) else 0  # click returns an Exit's code when not standalone
        if code == EXIT_CODES["interrupted"]:  # typer turned Ctrl-C into Exit(130) on the way
            _interrupted()
        if argv is None:
            sys.exit(code)
        return code
    except AssayError as e:
        code = report_error(e)
        if argv is None:
            sys.exit(code)
        return code
    except typer.Exit as e:
        if e.exit_code == EXIT_CODES["interrupted"]:
            _interrupted()
        if argv is None:
            sys.exit(e.exit_code)
        return e.exit_code
    except KeyboardInterrupt:
        _interrupted()
        if argv is None:
            sys.exit(EXIT_CODES["interrupted"])
        return EXIT_CODES["interrupted"]
    except Exception as e:  # command-line usage errors (unknown option, bad value): exit 2, no traceback
        if isinstance(e, _usage_exceptions()):
            e.show()  # type: ignore[attr-defined]
            if argv is None:
                sys.exit(EXIT_CODES["usage"])
            return EXIT_CODES["usage"]
        raise
    return 0


if __name__ == "__main__":
    main()
