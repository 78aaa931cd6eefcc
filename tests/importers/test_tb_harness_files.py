"""A Terminal-Bench 1 Dockerfile that copies the harness's own files (the tests, run-tests.sh, the
reference solution) into the image would hand the agent its own tests and answer: such a task is
refused naming the line and the leak, not as a missing file; a wholesale `COPY .` keeps the rest of
the task folder and says what it left out. (A fetched TB1 collection of 599 tasks copies
`tests/`, `run-tests.sh` and the reference solution into every image.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.importers import import_suite

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "terminal-bench" / "evoeval-0"


def _task(root: Path, name: str, extra: str) -> Path:
    t = root / name
    shutil.copytree(FIXTURE, t)
    with open(t / "Dockerfile", "a") as f:
        f.write("\n" + extra)
    return t


@pytest.mark.parametrize(("line", "leaked"), [
    ("COPY tests/ /app/tests/", "tests/"),
    ("COPY run-tests.sh /app/run-tests.sh", "run-tests.sh"),
    ("COPY ./solution.sh /oracle/solution.sh", "solution.sh"),
    ("ADD tests /opt/t", "tests"),
])
def test_a_dockerfile_that_copies_the_harness_files_is_refused_as_a_leak(tmp_path: Path, line: str,
                                                                          leaked: str) -> None:
    src = tmp_path / "src"
    _task(src, "leaky", line)
    _task(src, "fine", "RUN true")
    report = {t.id: t for t in import_suite("terminal-bench", src, tmp_path / "out").tasks}
    leaky = report["leaky"]
    assert not leaky.imported and report["fine"].imported
    [why] = leaky.refused
    assert "Dockerfile:" in why and leaked in why and "would read" in why, why
    assert "not found in the build context" not in why


def test_copy_of_the_whole_task_folder_leaves_the_harness_files_out_and_says_so(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _task(src, "whole", "COPY . /app/")
    [r] = import_suite("terminal-bench", src, tmp_path / "out").tasks
    assert r.imported
    assert any("COPY . /app/" in a and "tests" in a and "left out" in a for a in r.approximated), r.approximated
    env = tmp_path / "out" / "tasks" / "whole" / "environment"
    assert not (env / "tests").exists() and not (env / "solution.sh").exists()


def test_the_real_leaky_task_is_refused_for_its_leak(tmp_path: Path) -> None:
    """The fetched dataset's own task (tests/fixtures/import/terminal-bench-leaky, Apache-2.0)."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "terminal-bench-leaky"
    src = tmp_path / "src"
    shutil.copytree(real / "lcbpro-1983a", src / "lcbpro-1983a")
    _task(src, "fine", "RUN true")
    report = {t.id: t for t in import_suite("terminal-bench", src, tmp_path / "out").tasks}
    [why] = report["lcbpro-1983a"].refused
    assert why.startswith("Dockerfile:21 copies the harness's own 'tests/'") and "would read" in why, why
