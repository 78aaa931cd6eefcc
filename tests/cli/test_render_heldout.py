"""`assay show` withholds a held-out task: no trial row in the run view, no evidence, output,
trace or diff in the trial view; the summary still counts it (tests/heldout_run.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_assay
from tests.heldout_run import MARKS, OPEN_MARK, held_out_run


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return held_out_run(tmp_path_factory.mktemp("heldout-cli"))


def test_show_run_lists_open_trials_only_and_counts_all(run: Path) -> None:
    p = assay("show", str(run))
    assert p.returncode == 0, p.stderr
    assert "open1.base.echoer.r1" in p.stdout and "held1.base.echoer.r1" not in p.stdout
    assert "1 trial(s) of held-out tasks not listed" in p.stdout
    assert "(2/2)" in p.stdout  # the summary counts the held-out trial
    assert not [m for m in MARKS if m in p.stdout + p.stderr]


@pytest.mark.parametrize("diff", [False, True])
def test_show_trial_of_a_held_out_task_shows_no_detail(run: Path, diff: bool) -> None:
    p = assay("show", str(run), "held1.base.echoer.r1", *(["--diff"] if diff else []))
    assert p.returncode == 0, p.stderr
    assert "held-out task" in p.stdout and "pass" in p.stdout
    assert not [m for m in MARKS if m in p.stdout + p.stderr]
    control = assay("show", str(run), "open1.base.echoer.r1", *(["--diff"] if diff else []))
    assert OPEN_MARK in control.stdout  # the same view shows an open task's details
