"""``assay``: the root command. Each area registers its commands from its own module
(``register(app)``); only the module of the command invoked is imported (``assay --help`` lists
the commands from :data:`COMMANDS` and imports none of them), and every error is mapped to an exit
code here, in one place. Ctrl-C at any point, start-up included, is one line and exit 130."""

from __future__ import annotations

import os
import sys
from typing import Any

from assay.errors import EXIT_CODES

#: command (or command group) -> (the module that registers it, the line ``assay --help`` shows);
#: kept true by tests/cli/test_cli_habits.py against the modules themselves
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("assay.cli.core", "Run a suite against one or more agents and write a run directory."),
    "validate": ("assay.cli.core", "Check that the oracle passes every task and the do-nothing agent fails every task."),
    "show": ("assay.cli.evidence", "Show a run's results, or one trial's evidence."),
    "schema": ("assay.cli.evidence", "Print the JSON Schema of a file kind (for editors and validators) or of a document assay writes."),
    "verify": ("assay.cli.evidence", "Recompute every digest of a run directory and report files changed after the run."),
    "pack": ("assay.cli.evidence", "Write a content-addressed suite package; `assay run FILE --expect-digest D` runs exactly it."),
    "index": ("assay.cli.evidence", "(Re)build the derived SQLite index of a run, or query it."),
    "doctor": ("assay.cli.sandbox", "Say which bwrap is used, whether namespaces work here and which sandbox backend is the default."),
    "score": ("assay.cli.score", "Score a run into a new numbered score version (scores/score-NNNN.json and its trial rows in score-NNNN.trials.jsonl); older versions stay."),
    "report": ("assay.cli.score", "Write a report of a run: self-contained HTML, Markdown, or the versioned JSON."),
    "compare": ("assay.cli.score", "Compare two runs on their shared tasks only."),
    "export": ("assay.cli.export", "Export every attempt of a run as rows (schema assay.results/1): JSON Lines, CSV or Parquet."),
    "agents": ("assay.cli.agents", "List the agents assay can drive; install the product agents."),
    "gateway": ("assay.cli.gateway", "The model gateway (OpenAI- and Anthropic-compatible)."),
    "tools": ("assay.cli.worlds", "Print the world tools a task offers (name, description, JSON Schema)."),
    "approvals": ("assay.cli.worlds", "List and decide approval requests of a run."),
    "judge": ("assay.cli.judge", "LLM judges: calibration against human labels, and the calibration gate."),
    "k8s": ("assay.cli.k8s", "Kubernetes: render what to apply for a campaign on a KubeRay cluster."),
    "metrics": ("assay.cli.observe", "The run's Prometheus series (the same ones `assay run --metrics-port` serves live)."),
    "dashboard": ("assay.cli.observe", "Print the Grafana dashboard (JSON) of the seeds' home page; import it in Grafana."),
    "export-otlp": ("assay.cli.observe", "Send every trial of a run as an OpenTelemetry trace (OTLP/HTTP; OTEL_* variables apply)."),
    "export-langfuse": ("assay.cli.observe", "Export a run to Langfuse: dataset of task variants, one experiment per agent and repetition."),
    "variants": ("assay.cli.variants", "Counterfactual variants of tasks and the sensitivity report."),
    "import": ("assay.cli.cases", "Import production traces as candidate cases."),
    "cases": ("assay.cli.cases", "Review and promote candidate cases; check held-out tasks for contamination."),
    "recovery": ("assay.cli.recovery", "Recovery under tool, process and model faults."),
    "lint": ("assay.cli.exposure", "Check statically what each task exposes to the agent."),
    "audit": ("assay.cli.audit", "Audit a suite's tasks (exit 1 when any is not valid) or a run's suspect passes."),
    "ctl": ("assay.cli.ctl", "Steer a running run: pause, resume, jobs N, requeue-infra, stop (each change recorded)."),
    "view": ("assay.cli.view", "Browse runs in a local web app: run list, live runs, trials, compare, the audit queue."),
    "perf": ("assay.cli.perf", "Measure agents' own cost against the scripted gateway: start, resume, store, memory, concurrency."),
    "env": ("assay.cli.environments", "Task environments: build, list, show, prune and export task images."),
    "plugins": ("assay.cli.plugins", "List every plug-in kind (agents, sandboxes, model backends, predicates, worlds, export targets) and its names."),
}
#: every command module, in the order ``assay --help`` lists them
COMMAND_MODULES = tuple(dict.fromkeys(module for module, _ in COMMANDS.values()))
#: the help is click's plain text (every sub-app inherits it from the root): typer's rich help
#: imports rich's markdown parser and tracebacks at its top, about 80 ms for any ``--help``,
#: which alone put ``assay --help`` past 0.2 s
HELP_MARKUP = None
#: set by the shell while it asks for completions (typer's): every command is registered then
COMPLETE_ENV = "_ASSAY_COMPLETE"

app: Any = None  # the fully registered app (for tests and tools that introspect every command)


def _version(value: bool) -> None:
    if value:
        from assay import __version__

        print(f"assay {__version__}")
        import typer

        raise typer.Exit()


def new_app(command: str | None) -> Any:
    """The root app with ``command``'s module registered (every module when None); the other
    commands are listed by name and line only, so ``assay --help`` imports none of them."""
    import typer

    from assay._optional import optional_import
    from assay.cli.help_format import command_group

    root = command_group(name="assay", help="Evaluate AI agents: versioned tasks, sandboxes, independent verifiers.",
                         no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
                         rich_markup_mode=HELP_MARKUP)

    @root.callback()
    def _root(version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                           help="Print assay's version and exit.")) -> None:
        """Evaluate AI agents: versioned tasks, sandboxes, independent verifiers."""
        from assay.cli.startup import settled

        settled()  # the invoked command's module is imported by now

    wanted = COMMAND_MODULES if command is None else tuple(m for n, (m, _) in COMMANDS.items() if n == command)
    registered: set[str] = set()
    for name in wanted:
        try:
            mod = optional_import(name)
        except Exception as e:  # noqa: BLE001 - one broken area must not take the other commands down
            _err().print(f"[yellow]warning:[/] commands of {name} unavailable: {type(e).__name__}: {e}")
            continue
        if mod is not None:
            mod.register(root)
            registered.add(name)
    for name, (module, line) in COMMANDS.items():
        if module not in registered:
            root.command(name, help=line, short_help=line, add_help_option=False,
                         context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(_listed_only)
    return root


def _listed_only() -> None:
    """Never runs: a command is registered for real whenever it is the one invoked."""


def _register() -> None:
    """Fill :data:`app` with every command (idempotent)."""
    global app
    if app is None:
        app = new_app(None)


def _invoked(args: list[str]) -> str | None:
    """The command named on the command line (the first word that is not an option), if known."""
    for a in args:
        if not a.startswith("-"):
            return a if a in COMMANDS else None
    return None


def _err() -> Any:
    from rich.console import Console

    # one line per problem on stderr, never wrapped; emoji=False: ``:-1:`` in a path stays ``:-1:``
    return Console(stderr=True, soft_wrap=True, emoji=False)


def _usage_exceptions() -> tuple[type[BaseException], ...]:
    """Click's usage errors: typer >= 0.29 carries its own copy of click, older ones use click."""
    import importlib

    kinds: list[type[BaseException]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            kinds.append(importlib.import_module(module).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(kinds)


def _interrupted() -> None:
    try:
        from assay.cli.outcome import resume_hint

        line = resume_hint()
    except (KeyboardInterrupt, Exception):  # noqa: BLE001 - a second Ctrl-C, or start-up not far enough
        line = "INTERRUPTED"
    sys.stderr.write(line + "\n")


def report_error(e: Any) -> int:
    from rich.markup import escape

    from assay.errors import SpecError, Verdict

    err = _err()
    if isinstance(e, SpecError) and len(e.problems) == 1:  # one problem, one line
        err.print(f"[red]error:[/red] {escape(e.problems[0].render())}", highlight=False)
    elif isinstance(e, SpecError):
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
    return int(e.exit_code)


def _run(args: list[str]) -> int:
    import typer

    from assay.cli.config import project_defaults
    from assay.errors import AssayError

    try:
        command = None if os.environ.get(COMPLETE_ENV) else _invoked(args)
        root = new_app(command) if command is not None or os.environ.get(COMPLETE_ENV) else new_app("")
        rv = root(args=args, standalone_mode=False, default_map=project_defaults(root, command, set(COMMANDS)),
                  prog_name="assay")
        code = rv if isinstance(rv, int) else 0  # click returns an Exit's code when not standalone
        if code == EXIT_CODES["interrupted"]:  # typer turned Ctrl-C into Exit(130) on the way
            _interrupted()
        return code
    except AssayError as e:
        return report_error(e)
    except typer.Exit as e:
        if e.exit_code == EXIT_CODES["interrupted"]:
            _interrupted()
        return e.exit_code
    except Exception as e:  # command-line usage errors (unknown option, bad value): exit 2, no traceback
        if isinstance(e, _usage_exceptions()):
            e.show()  # type: ignore[attr-defined]
            return EXIT_CODES["usage"]
        raise


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the process entry: the collector waits for the imports (cli/startup.py)
        from assay.cli.startup import begin

        begin()
    try:
        code = _run(args)
    except KeyboardInterrupt:  # at any point: while importing, parsing or running
        _interrupted()
        code = EXIT_CODES["interrupted"]
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":
    main()
