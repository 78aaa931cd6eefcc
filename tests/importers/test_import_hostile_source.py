"""A third-party collection is hostile input to the importer. A task whose files are links out of
its folder would have the importer read the host's files into the suite (a prompt holding the
host's secret, sent to a model and printed in every report; a build context that copies the
host's folders into the image the agent runs in), and a FIFO where a file should be would hang
the import. Such a task is refused, naming the entry; nothing of what it points to is written;
the rest of the collection imports. A link that stays inside the task folder is kept as a link."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.importers import import_suite
from tests.conftest import run_assay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"
SECRET = "HOST-SECRET-7c1e5"


@pytest.fixture
def collection(tmp_path: Path) -> Path:
    """A good Harbor task, and a folder of the host's with a secret in it (outside the collection)."""
    (tmp_path / "host").mkdir()
    (tmp_path / "host/secret.txt").write_text(f"{SECRET}\n")
    (tmp_path / "host/tests").mkdir()
    (tmp_path / "host/tests/test.sh").write_text(f"#!/bin/sh\necho {SECRET} > /logs/verifier/reward.txt\n")
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")
    return src


def _evil(src: Path, plant) -> None:
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "evil")
    plant(src / "evil")


def _relink(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
    path.symlink_to(target)


def _nothing_leaked(out: Path) -> None:
    for p in out.rglob("*"):
        if p.is_file() and not p.is_symlink():
            assert SECRET not in p.read_text(errors="replace"), p


@pytest.mark.parametrize(("plant", "named"), [
    (lambda t: _relink(t / "instruction.md", t.parent.parent / "host/secret.txt"), "instruction.md"),
    (lambda t: _relink(t / "tests", t.parent.parent / "host/tests"), "tests"),
    (lambda t: _relink(t / "environment", t.parent.parent / "host"), "environment"),
    (lambda t: (t / "environment/data.txt").symlink_to(t.parent.parent / "host/secret.txt"), "environment/data.txt"),
    (lambda t: (t / "solution/notes").symlink_to("../../../host"), "solution/notes"),  # relative, still out
])
def test_a_link_out_of_the_task_folder_refuses_the_task_and_reads_nothing(collection: Path, tmp_path: Path,
                                                                           plant, named: str) -> None:
    _evil(collection, plant)
    out = tmp_path / "suite"
    report = import_suite("harbor", collection, out)
    evil = {t.id: t for t in report.tasks}["evil"]
    assert not evil.imported and any(named in w and "outside the task folder" in w for w in evil.refused), evil.refused
    assert not (out / "tasks/evil").exists()
    _nothing_leaked(out)


def test_a_task_folder_that_is_itself_a_link_is_refused(collection: Path, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "harbor/simple-task", tmp_path / "elsewhere/task")
    (collection / "linked").symlink_to(tmp_path / "elsewhere/task")
    report = import_suite("harbor", collection, tmp_path / "suite")
    linked = [t for t in report.tasks if t.source.endswith("linked")]
    assert not linked or not linked[0].imported  # never imported from outside the collection it was given


def test_a_link_inside_the_task_stays_a_link_and_the_task_imports(collection: Path, tmp_path: Path) -> None:
    (collection / "good/tests/again.sh").symlink_to("test.sh")
    out = tmp_path / "suite"
    report = import_suite("harbor", collection, out)
    assert {t.id: t.imported for t in report.tasks}["good"]
    copied = out / "tasks/good/hidden/tests/again.sh"
    assert copied.is_symlink() and os.readlink(copied) == "test.sh"


def test_a_fifo_in_a_task_is_refused_without_hanging_the_import(collection: Path, tmp_path: Path) -> None:
    """Bounded by the subprocess timeout: an importer that opens the FIFO never returns."""
    _evil(collection, lambda t: ((t / "instruction.md").unlink(), os.mkfifo(t / "instruction.md")))
    try:
        res = run_assay("import", "harbor", str(collection), "-o", str(tmp_path / "suite"))
    except subprocess.TimeoutExpired:
        pytest.fail("the import hung on a FIFO")
    assert res.returncode == 1, res.stderr  # one task left out
    report = (tmp_path / "suite/import-report.md").read_text()
    assert "instruction.md" in report and "not a regular file" in report


def test_terminal_bench_1_task_yaml_as_a_link_out_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    victim = sorted(p for p in src.iterdir() if (p / "task.yaml").is_file())[0]
    (tmp_path / "host.yaml").write_text(f"instruction: {SECRET}\n")
    _relink(victim / "task.yaml", tmp_path / "host.yaml")
    out = tmp_path / "suite"
    report = import_suite("terminal-bench", src, out)
    refused = {t.id: t for t in report.tasks if not t.imported}
    assert any("task.yaml" in " ".join(t.refused) for t in refused.values()), report.tasks
    _nothing_leaked(out)
