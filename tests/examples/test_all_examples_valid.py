"""Every shipped example suite meets the standard it teaches: the oracle passes, the do-nothing
agent fails, and every state mutant of the oracle's end state fails (``assay validate
--mutants``). A new example folder with a suite.yaml is picked up without touching this file."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.run.validate import validate_suite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUITES = sorted(p.parent.name for p in EXAMPLES.glob("*/suite.yaml"))

pytestmark = pytest.mark.slow


def test_the_example_suites_are_found() -> None:
    assert {"bookkeeping", "conversations", "starter", "tickets"} <= set(SUITES), SUITES


@pytest.mark.parametrize("name", SUITES)
def test_example_suite_passes_validate_with_mutants(name: str) -> None:
    report = validate_suite(EXAMPLES / name, mutants=True)
    problems = {f"{v.task_id}/{v.variant}": v.problems for v in report.invalid}
    assert report.ok, problems
