"""The example suite of task environments (examples/environments): the oracle passes every task
and nop fails every task, over images built here, with hidden tests run by the image's python3.
bash-pipefail needs scripts run by their shebang, multiprocessing a writable /dev/shm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.records.results import AttemptResult, EndState
from assay.run import RunOptions, start_run
from tests.conftest import cli_timeout
from tests.environments.conftest import EXAMPLES

@pytest.fixture(scope="module")
def run_dir(example_images, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: ANN001
    out = tmp_path_factory.mktemp("env") / "run"
    start_run(RunOptions(suite=EXAMPLES, agents=["oracle", "nop"], out=out, jobs=2, max_retries=0))
    return out


@pytest.fixture(scope="module")
def results(run_dir: Path) -> dict[tuple[str, str], AttemptResult]:
    from assay.store.rundir import RunDir

    return {(r.agent, r.task_id): r for r in RunDir.open(run_dir).results()}


def _explain(r: AttemptResult) -> str:
    return f"{r.task_id}/{r.agent}: {r.end_state} {[(p.id, p.passed, str(p.evidence)[:600]) for p in r.predicates]}"


TASKS = sorted(p.name for p in (EXAMPLES / "tasks").iterdir())


@pytest.mark.parametrize("task", TASKS)
def test_the_oracle_passes(results: dict[tuple[str, str], AttemptResult], task: str) -> None:
    r = results[("oracle", task)]
    assert r.end_state is EndState.passed, _explain(r)


@pytest.mark.parametrize("task", TASKS)
def test_nop_fails(results: dict[tuple[str, str], AttemptResult], task: str) -> None:
    r = results[("nop", task)]
    assert r.end_state is EndState.failed, _explain(r)


def test_the_manifest_names_each_image_and_verify_checks_it(run_dir: Path) -> None:
    from assay.store.rundir import RunDir

    tasks = {t.id: t.environment for t in RunDir.open(run_dir).manifest().tasks}
    assert all(e is not None and "@sha256:" in e.image for e in tasks.values())
    assert tasks["app-workdir"].deviations and not tasks["pip-pandas"].deviations  # type: ignore[union-attr]
    res = subprocess.run([sys.executable, "-m", "assay.cli.main", "verify", str(run_dir)], capture_output=True,
                         text=True, timeout=cli_timeout(10))  # five images' digests: not measured apart
    assert res.returncode == 0 and "5 task image(s) match" in res.stdout, res.stdout + res.stderr


def test_the_from_mapping_is_shown_in_the_report(run_dir: Path) -> None:
    """app-workdir's ``FROM python:3.11-slim`` is a deviation in the report, not only in the manifest."""
    from assay.report import build_report

    md = build_report(run_dir, "md")
    assert "## How tasks were read" in md
    assert "| app-workdir | approximated | FROM python:3.11-slim mapped to debian:bookworm" in md, md
