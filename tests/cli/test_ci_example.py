"""The example CI workflow only uses options the CLI really has (it is documentation that runs)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from typer.testing import CliRunner

from assay.cli.main import new_app

WORKFLOW = Path(__file__).resolve().parents[2] / "examples" / "ci" / "assay.yml"


def test_every_assay_option_in_the_example_workflow_exists() -> None:
    app = new_app(None)
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["evaluate"]["steps"]
    scripts = " ".join(s.get("run", "") for s in steps)
    calls = re.findall(r"\bassay (run|compare|score|verify|doctor)\b(.*?)(?=\bassay (?:run|compare|score|verify|doctor)\b|$)",
                       scripts.replace("\\\n", " "), flags=re.S)
    assert {c for c, _ in calls} >= {"run", "compare", "verify"}
    runner = CliRunner()
    for command, args in calls:
        help_text = runner.invoke(app, [command, "--help"], terminal_width=400).output
        for option in set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", args)):
            assert option in help_text, f"assay {command} has no option {option}"
