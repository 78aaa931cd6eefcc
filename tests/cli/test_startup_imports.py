"""What a trivial ``assay run`` imports: start-up is most of a one-trial run's cost, so the
libraries only some tasks or commands use stay out of a run that does not use them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli.main import COMMAND_MODULES as COMMANDS_MODULES
from assay.cli.main import COMMANDS
from tests.conftest import assay_env, cli_timeout, write_suite, write_task

#: imported only where used: the judge's and the simulated user's HTTP client, JSON Schema checks
#: of tool calls and of files, the world tool server, JUnit XML, the report renderers, the CLI's
#: other command modules, the comparison of two runs (its models: a run's score builds none)
NOT_AT_START = ("httpx", "jsonschema", "uvicorn", "starlette", "xml.etree.ElementTree", "assay.report.build",
                "assay.report.html", "assay.cli.export", "assay.cli.view", "assay.records.comparison")

PROBE = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["assay", *sys.argv[2:]]
runpy.run_module("assay.cli.main", run_name="__main__")
"""


def test_a_trivial_run_imports_none_of_what_it_does_not_use(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "predicates": [
        {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]},
        workspace={"README": "nothing to do\n"})
    seen = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(seen), "run", str(s), "--agent", "nop", "--quiet",
                           "-o", str(tmp_path / "run")], capture_output=True, text=True, env=assay_env(),
                          timeout=cli_timeout(5))
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(seen.read_text()))
    assert "assay.run.runner" in modules and "assay.score.engine" in modules  # the probe saw the run
    assert (tmp_path / "run" / "manifest.json").is_file()
    assert sorted(m for m in NOT_AT_START if m in modules) == []


#: what ``assay COMMAND --help`` needs none of: the engine, the sandbox backends, the services,
#: the spec loader and the records (their pydantic models), the scorer and the renderers
NOT_FOR_HELP = ("assay.run", "assay.run.runner", "assay.sandbox", "assay.sandbox.bwrap", "assay.gateway",
                "assay.agents.base", "assay.harness", "assay.spec.load", "assay.spec.task", "assay.spec.budget",
                "assay.records.results", "assay.records.scores", "assay.score.engine", "assay.store.rundir",
                "assay.cli.render",
                # the help is click's plain text: typer's rich help imports rich's markdown parser and
                # tracebacks at its top, about 80 ms, for any help (more than the rest of ``--help``)
                "typer.rich_utils", "rich.markdown")


@pytest.mark.parametrize("command", ["run", "validate", "show", "verify", "agents", "gateway", "judge", "k8s"])
def test_a_command_help_imports_only_what_the_help_needs(command: str, tmp_path: Path) -> None:
    seen = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(seen), command, "--help"], capture_output=True,
                          text=True, env=assay_env(), timeout=cli_timeout())
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout and "--help" in proc.stdout  # the help itself, whole
    modules = set(json.loads(seen.read_text()))
    assert COMMANDS[command][0] in modules  # the command was registered for real, not only listed
    assert sorted(m for m in NOT_FOR_HELP if m in modules) == []


def test_the_root_help_shows_every_command_line_whole_and_imports_none_of_the_rich_help(tmp_path: Path) -> None:
    seen = tmp_path / "modules.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(seen), "--help"], capture_output=True, text=True,
                          env={**assay_env(), "COLUMNS": "80"}, timeout=cli_timeout())
    assert proc.returncode == 0, proc.stderr
    flat = "".join(proc.stdout.split())  # wrapped lines may break after a hyphen too
    for name, (_, line) in COMMANDS.items():  # wrapped, not cut at the terminal's width
        assert f"\n  {name} " in proc.stdout and name + "".join(line.split()) in flat, name
    modules = set(json.loads(seen.read_text()))
    assert sorted(m for m in ("typer.rich_utils", "rich.markdown", *COMMANDS_MODULES) if m in modules) == []
