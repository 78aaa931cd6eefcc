"""Core commands: run and validate (the commands over a run's evidence: :mod:`assay.cli.evidence`)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from assay.cli.console import make_console
from assay.cli.score import JunitOpt, MaxInfraOpt, SummaryOpt
from assay.errors import DEFAULT_MAX_INFRA_RATE, RunDirError, UsageError
from assay.spec.network import NetworkProfile

# what a command does is imported inside it: `assay COMMAND --help` needs only the signatures above
# (tests/cli/test_startup_imports.py holds it)
out = make_console()
err = make_console(stderr=True)


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on standard output instead of tables.")]


def _settings(ctx: typer.Context) -> dict[str, Any] | None:
    """Which options came from the project config file or an ``ASSAY_<OPTION>`` variable (bound into
    the manifest: what shaped a run is recorded, wherever it was said)."""
    from assay.cli import config

    def source(name: str) -> str:  # by name: typer may carry its own copy of click and its enum
        src = ctx.get_parameter_source(name)
        return getattr(src, "name", "")

    from_file = {n: v for n, v in ctx.params.items() if source(n) == "DEFAULT_MAP"}
    from_env = {}
    for p in ctx.command.params:
        if p.name and source(p.name) == "ENVIRONMENT":
            from_env[str(p.envvar)] = str(ctx.params[p.name])
    out: dict[str, Any] = {}
    if from_file and config.LOADED is not None:
        out["config_file"] = config.LOADED.record(ctx.command.name or "run", from_file)
    if from_env:
        out["environment"] = from_env
    return out or None


def run(
    ctx: typer.Context,
    suite: Annotated[Optional[Path], typer.Argument(help="Suite folder (holding suite.yaml) or a suite package made by `assay pack`.")] = None,
    agent: Annotated[list[str], typer.Option("--agent", "-a", help="Agent name(s) or command-agent YAML; comma-separated or repeated.")] = [],  # noqa: B006
    repeat: Annotated[int, typer.Option("--repeat", "-n", help="Repetitions of every task.")] = 1,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Trials run in parallel.")] = 1,
    out_dir: Annotated[Optional[Path], typer.Option("--out", "-o", help="Run directory (default runs/<run id>).")] = None,
    resume: Annotated[Optional[Path], typer.Option("--resume", help="Finish the plan of a stopped run.")] = None,
    sandbox: Annotated[Optional[str], typer.Option(help="Sandbox backend (default: bwrap if usable, else host).")] = None,
    network: Annotated[NetworkProfile, typer.Option(help="none | harness | host (host is an explicit opt-in).")] = NetworkProfile.harness,
    model: Annotated[Optional[str], typer.Option(help="Model gateway backend: scripted | replay:PATH | upstream:URL | local.")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="Judge model for judge predicates: upstream:URL#MODEL | local.")] = None,
    faults: Annotated[Optional[Path], typer.Option(help="YAML list of model faults injected for every attempt.")] = None,
    prices: Annotated[Optional[Path], typer.Option(help="YAML price table (USD per million tokens per model).")] = None,
    max_retries: Annotated[int, typer.Option(help="Retries per trial, for classified infrastructure errors only.")] = 1,
    max_cost: Annotated[Optional[float], typer.Option(help="Run-wide budget in USD over every model call of the run (price table); the run stops cleanly when it is reached, `--resume RUN --max-cost HIGHER` continues.")] = None,
    max_tokens: Annotated[Optional[int], typer.Option(help="Run-wide budget in input+output tokens over every model call of the run.")] = None,
    variants: Annotated[str, typer.Option(help="all | base")] = "all",
    task: Annotated[list[str], typer.Option("--task", "-t", help="Only these task ids (repeatable).")] = [],  # noqa: B006
    exclude: Annotated[list[str], typer.Option("--exclude", "-x", help="Leave out these tasks: ids or shell patterns, comma-separated or repeated (recorded in the plan, said beside the scores).")] = [],  # noqa: B006
    track: Annotated[str, typer.Option(help="controlled | native")] = "controlled",
    keep_scratch: Annotated[bool, typer.Option(help="Keep each attempt's scratch workspace (debugging).")] = False,
    expect_digest: Annotated[Optional[str], typer.Option(help="Refuse to start unless the suite (folder or package) has this digest (`assay pack` prints it).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    junit: JunitOpt = None,
    summary_md: SummaryOpt = None,
    max_infra_rate: MaxInfraOpt = DEFAULT_MAX_INFRA_RATE,
    metrics_port: Annotated[Optional[int], typer.Option(help="Serve Prometheus /metrics on this port while the run is live (loopback; ASSAY_METRICS_HOST to change).")] = None,
    metrics_textfile: Annotated[Optional[Path], typer.Option(help="At the end, write the run's final metrics here for node-exporter's textfile collector (what a scrape could miss).")] = None,
    otlp: Annotated[Optional[str], typer.Option(help="Send each trial as an OpenTelemetry trace to this OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT does too).")] = None,
    executor: Annotated[str, typer.Option(help="local (default) | procs: attempts in worker processes of this machine | ray: attempts on a Ray cluster; with either, this process is the run directory's one writer.")] = "local",
    workers: Annotated[Optional[int], typer.Option(help="Worker processes with --executor procs (default: the usable CPUs, at most --jobs).")] = None,
    address: Annotated[Optional[str], typer.Option(help="Ray cluster: ray://HOST:PORT | auto | GCS HOST:PORT (with --executor ray).")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed of the shuffled trial order (default: a fresh one; recorded).")] = None,
    max_per_agent: Annotated[Optional[int], typer.Option(help="At most this many attempts of one agent at once (recorded).")] = None,
    max_per_model: Annotated[Optional[int], typer.Option(help="At most this many attempts calling the upstream model at once (recorded).")] = None,
    deadline: Annotated[Optional[float], typer.Option(help="Campaign deadline in seconds: what is still running then is closed, recorded as `deadline`.")] = None,
    results: Annotated[Optional[str], typer.Option("--results", help="files (default): a result file per attempt | log: every result in one append-only results.jsonl, what keeps `score`, `report`, `export` and `verify` of a very large run from opening a file per trial.")] = None,
    controls: Annotated[bool, typer.Option("--controls", help="Add each task's impossible-task controls: their pass rate is reported beside the capability score (0 is the goal).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite against one or more agents and write a run directory (exit 6 when the run
    budget stopped it with trials pending, 5 when nothing was scored, 4 above --max-infra-rate,
    130 when interrupted, with the resume hint)."""
    from assay.cli import startup

    startup.importing()
    from assay.cli.controls import controls_line
    from assay.cli.outcome import RunDirSeen, check_budget, check_stopped, score_finished_run
    from assay.cli.progress import ProgressPlugin
    from assay.cli.render import summary_table
    from assay.run.runner import RunOptions, resume_run, start_run
    from assay.run.schedule import ExecutorOptions
    from assay.run_budget.meter import run_budget_from_cli
    from assay.score.gates import check_run
    from assay.spec.user_file import check_output_path

    startup.settled()
    if jobs < 1 or repeat < 1 or max_retries < 0:
        raise UsageError("--jobs and --repeat must be at least 1 and --max-retries at least 0 "
                         f"(got --jobs {jobs}, --repeat {repeat}, --max-retries {max_retries})")
    run_budget = run_budget_from_cli(max_cost, max_tokens)
    check_output_path("--junit", junit)  # before any trial: a run is never lost to an unwritable report path
    check_output_path("--summary-md", summary_md)
    if executor in ("local", "procs"):
        from assay.run.hostload import cpus

        if jobs > cpus():
            err.print(f"note: --jobs {jobs} is more than this host's {cpus()} CPU(s): wall-time budgets then measure "
                      "the host as much as the agent; a timeout taken under contention is flagged host_contended",
                      highlight=False)
    from assay.cli.observe import run_plugins

    progress = ProgressPlugin(err, enabled=not quiet)
    seen = RunDirSeen()  # names the run directory in the resume hint if the run is interrupted
    plugins = [progress, seen, *run_plugins(metrics_port, otlp, metrics_textfile)]
    where = ExecutorOptions(executor, address, workers=workers)
    if resume is not None:
        if suite is not None or agent or expect_digest or exclude or task or results is not None:
            raise UsageError("--resume takes the run directory only; the suite, agents, tasks and where results go "
                             "come from its manifest")
        with _disk_full_is_one_line(resume):
            outcome = resume_run(resume, jobs=jobs if jobs != 1 else None, plugins=plugins, keep_scratch=keep_scratch,
                                 run_budget=run_budget, executor=where, read_results=False)
    else:
        if suite is None:
            raise UsageError("give a SUITE folder or package, or --resume RUN_DIR")
        agents = _split(agent)
        if not agents:
            raise UsageError("give at least one --agent (e.g. --agent oracle)")
        if track not in ("controlled", "native"):
            raise UsageError(f"--track must be controlled or native, not {track!r}")
        if results not in (None, "files", "log"):
            raise UsageError(f"--results must be files or log, not {results!r}")
        if variants not in ("all", "base"):
            raise UsageError(f"--variants must be all or base, not {variants!r}")
        suite = _checked_suite(suite, expect_digest)
        with _disk_full_is_one_line(out_dir):
            outcome = start_run(RunOptions(suite=suite, agents=agents, repeat=repeat, jobs=jobs, out=out_dir,
                                           sandbox=sandbox, network=network, model=model, judge_model=judge_model,
                                           faults_file=faults, prices_file=prices, max_retries=max_retries,
                                           variants=variants, tasks=task or None, exclude=_split(exclude) or None,
                                           track=track,
                                           keep_scratch=keep_scratch, plugins=plugins, run_budget=run_budget,
                                           executor=where, seed=seed, max_per_agent=max_per_agent,
                                           max_per_model=max_per_model, deadline_s=deadline,
                                           settings=_settings(ctx), controls=controls, results=results or "files",
                                           read_results=False))  # scored below, never read back whole
    for note in outcome.notes:
        err.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    if not outcome.manifest.sandbox.isolated:
        (err if as_json else out).print("[bold red]UNSANDBOXED:[/] the host backend isolates nothing; do not compare these results")
    import tempfile

    with tempfile.TemporaryDirectory(prefix="assay-run-rows-") as rows:  # the score's rows while it is shown
        # --json prints every row, each result's digest and each unit's trials: scored in memory, as ever
        doc = score_finished_run(outcome.run_dir.path, None if as_json else Path(rows), junit=junit,
                                 summary_md=summary_md)
        if as_json:
            print(json.dumps({"run_dir": str(outcome.run_dir.path), "notes": outcome.notes, "score": doc.dump()},
                             indent=1))
        else:
            out.print(summary_table(doc, title=f"run {outcome.manifest.run_id}", width=out.width))
            if (line := controls_line(doc)) is not None:
                out.print(line, highlight=False)
            out.print(f"run directory: {outcome.run_dir.path}")
        check_budget(outcome)
        check_stopped(outcome)
        check_run(doc, max_infra_rate=max_infra_rate)


def _checked_suite(suite: Path, expect_digest: str | None) -> Path:
    """The suite folder to run: a package is checked and unpacked, a digest is held to."""
    from assay.spec.pack import check_suite_digest, is_package, open_package

    if is_package(suite):
        return open_package(suite, expect=expect_digest)
    if expect_digest is None:
        return suite
    # a folder held to a digest runs from a sealed copy of itself, so an edit after the check cannot run
    import tempfile

    from assay.spec.pack import pack_suite

    with tempfile.TemporaryDirectory(prefix="assay-pack-") as tmp:
        copy = open_package(pack_suite(suite, Path(tmp)).path, expect=expect_digest)
    check_suite_digest(copy, expect_digest)
    return copy


@contextmanager
def _disk_full_is_one_line(run_dir: Path | None) -> Iterator[None]:
    """A full disk stops the run with one line saying what to do; what was written stays valid."""
    from assay.cli.outcome import last_started
    from assay.store.rundir import is_disk_full

    try:
        yield
    except OSError as e:
        if not is_disk_full(e):
            raise
        where = run_dir or last_started()
        hint = f"; free space, then `assay run --resume {where}`" if where else "; free space and run again"
        raise RunDirError(f"disk full ({e.strerror}) while writing {e.filename or where or 'the run'}: "
                          f"the run stopped, results written so far are intact{hint}") from None


def validate(
    suite: Annotated[Path, typer.Argument(help="Suite folder.")],
    sandbox: Annotated[Optional[str], typer.Option(help="Sandbox backend.")] = None,
    keep: Annotated[Optional[Path], typer.Option(help="Keep the validation run directory here.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j")] = 1,
    mutants: Annotated[bool, typer.Option("--mutants", help="Also require every state mutant of the oracle's end "
                                                            "state to fail (verifier mutation testing).")] = False,
    judge_model: Annotated[Optional[str], typer.Option("--judge-model", help="The judge model for tasks with judge "
                                                       "predicates (upstream:BASE_URL#MODEL or local); each judge "
                                                       "must be calibrated for it.")] = None,
    exposure: Annotated[bool, typer.Option("--exposure", help="Also run a probe in each task's real agent sandbox, "
                                                              "as every agent kind, and fail if anything of the "
                                                              "task's private files, expected values, the run "
                                                              "directory or the harness scratch is reachable.")] = False,
    controls: Annotated[bool, typer.Option("--controls", help="Also derive each task's impossible-task controls and "
                                                              "require the oracle and nop to fail every one.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check that the oracle passes every task and the do-nothing agent fails every task."""
    from rich.table import Table

    from assay.cli.controls import controls_json, show_controls
    from assay.cli.exposure import show_exposure
    from assay.run.validate import validate_suite

    exposed = show_exposure(suite, sandbox=sandbox, jobs=jobs, quiet=as_json) if exposure else None
    ctl = show_controls(suite, sandbox=sandbox, jobs=jobs, quiet=as_json) if controls else None
    leaked = (exposed is not None and not exposed.ok) or (ctl is not None and not ctl.ok)
    report = validate_suite(suite, sandbox=sandbox, keep=keep, jobs=jobs, mutants=mutants, judge_model=judge_model)
    if as_json:
        extra = {"exposure": {"ok": exposed.ok, "probed": len(exposed.audited), "not_probed": exposed.not_audited,
                              "leaks": [vars(x) for x in exposed.leaks]}} if exposed is not None else {}
        extra.update({"controls": controls_json(ctl)} if ctl is not None else {})
        print(json.dumps({"suite": str(report.suite), "ok": report.ok and not leaked, **extra, "verdicts": [
            {"task": v.task_id, "variant": v.variant, "ok": v.ok, "trust": v.trust_summary,
             "oracle": v.oracle.end_state.value if v.oracle else None, "nop": v.nop.end_state.value if v.nop else None,
             "problems": list(v.problems), **({"mutants": len(v.mutants), "survivors": len(v.survivors)} if mutants else {})}
            for v in report.verdicts]}, indent=1))
        if not report.ok or leaked:
            raise typer.Exit(1)
        return
    t = Table(title=f"validate {report.suite}")
    cols = ("task", "variant", "oracle", "nop", "trust", *(("mutants killed",) if mutants else ()), "verdict")
    for col in cols:
        t.add_column(col)
    for v in report.verdicts:
        killed = (f"{len(v.mutants) - len(v.survivors)}/{len(v.mutants)}",) if mutants else ()
        t.add_row(v.task_id, v.variant, v.oracle.end_state.value if v.oracle else "-",
                  v.nop.end_state.value if v.nop else "-", v.trust_summary, *killed,
                  "[green]ok[/]" if v.ok else "[red]INVALID[/]")
    out.print(t)
    for v in report.invalid:
        for p in v.problems:
            out.print(f"[red]INVALID[/] task {v.task_id} (variant {v.variant}): {p}", highlight=False)
    if not report.ok:
        out.print(f"{len(report.invalid)} of {len(report.verdicts)} task variant(s) invalid")
        raise typer.Exit(1)
    if leaked:
        raise typer.Exit(1)
    out.print(f"all {len(report.verdicts)} task variant(s) valid")


def with_environment(command: Any, prefix: str = "ASSAY_") -> Any:
    """Every option of ``command`` also settable as ``ASSAY_<OPTION>`` (``--max-infra-rate`` is
    ``ASSAY_MAX_INFRA_RATE``); a command-line value wins, then the variable, then the config file."""
    import inspect
    import typing

    hints = typing.get_type_hints(command, include_extras=True)  # evaluated once, kept: typer reads these
    for param in inspect.signature(command).parameters.values():
        for info in getattr(hints.get(param.name), "__metadata__", ()):
            if isinstance(info, typer.models.OptionInfo) and info.envvar is None:
                info.envvar = prefix + param.name.upper()
    command.__annotations__ = hints
    return command


def register(app: typer.Typer) -> None:
    app.command()(with_environment(run))
    app.command()(validate)
