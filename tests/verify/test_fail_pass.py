"""SWE-bench's FAIL_TO_PASS / PASS_TO_PASS predicate over the real iniconfig fixture
(tests/fixtures/import/swe-bench): the repository's own tests run in the verifier's copy with
the hidden test patch written over it; pass only when every named test passes. Attacks first:
an agent that plants a conftest.py skipping or forging tests, deletes the tests, or edits the
test patch's files does not pass; a named test that does not exist is a failure, and a gate
that ran nothing does not pass."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest
import yaml

from assay.importers import import_suite
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec import load_task
from assay.spec.digest import tree_digests
from assay.verify import run_verifier
from tests.verify.attack_kit import need_bwrap

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "swe-bench"
TID = "pytest-dev__iniconfig-c689ba7"
F2P = "testing/test_iniconfig.py::test_tokenize[assignment in value]"
SKIP_ALL = ("import pytest\n\ndef pytest_collection_modifyitems(items):\n"
            "    for i in items:\n        i.add_marker(pytest.mark.skip(reason='planted'))\n")
FORGE = ("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
         "    out = yield\n    rep = out.get_result()\n    rep.outcome = 'passed'\n")


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("swe") / "suite"
    import_suite("swe-bench", FIXTURE / "task-repo", out)
    return out / "tasks" / TID


def verify(task_dir: Path, tmp: Path, *, fix: bool, change=None, pred: dict | None = None):
    """The predicate's result over the task's workspace, the gold fix applied or not, then ``change``."""
    need_bwrap()
    if pred:
        d = tmp / "task"
        shutil.copytree(task_dir, d, symlinks=True)
        doc = yaml.safe_load((d / "task.yaml").read_text())
        doc["predicates"][0].update(pred)
        (d / "task.yaml").write_text(yaml.safe_dump(doc))
        task_dir = d
    ws = tmp / "ws"
    shutil.copytree(task_dir / "workspace", ws, symlinks=True)
    start = tree_digests(ws)
    if fix:
        shutil.copytree(task_dir / "solution" / "files", ws, dirs_exist_ok=True)
    if change:
        change(ws)
    r = asyncio.run(run_verifier(load_task(task_dir), ws, tmp / "verify", initial_digests=start, events=[],
                                 backend=BwrapBackend()))
    [p] = r.predicates
    return p


def test_the_fix_passes_and_doing_nothing_fails_naming_both_lists(task_dir: Path, tmp_path: Path) -> None:
    good = verify(task_dir, tmp_path / "a", fix=True)
    assert good.passed and good.trust == "in_process", good.evidence
    assert good.evidence["FAIL_TO_PASS"] == {F2P: "passed"}
    assert len(good.evidence["PASS_TO_PASS"]) == 41 and set(good.evidence["PASS_TO_PASS"].values()) == {"passed"}
    nop = verify(task_dir, tmp_path / "b", fix=False)
    assert not nop.passed
    assert nop.evidence["FAIL_TO_PASS"] == {F2P: "failed"}
    assert nop.evidence["summary"] == {"FAIL_TO_PASS": "0/1 passed", "PASS_TO_PASS": "41/41 passed"}


def test_a_planted_conftest_that_skips_or_forges_is_removed(task_dir: Path, tmp_path: Path) -> None:
    def plant(ws: Path) -> None:
        (ws / "conftest.py").write_text(SKIP_ALL)
        (ws / "src" / "conftest.py").write_text(FORGE)
        (ws / "testing" / "conftest.py").write_text(FORGE)  # the repository's own, edited
    p = verify(task_dir, tmp_path, fix=False, change=plant)
    assert not p.passed and p.evidence["FAIL_TO_PASS"] == {F2P: "failed"}
    assert p.evidence["verifier_copy"]["removed"] == ["conftest.py", "src/conftest.py"]
    assert "testing/conftest.py" in p.evidence["verifier_copy"]["replaced"]


def test_deleted_or_edited_tests_are_restored_from_the_test_patch(task_dir: Path, tmp_path: Path) -> None:
    def delete(ws: Path) -> None:
        shutil.rmtree(ws / "testing")
    gone = verify(task_dir, tmp_path / "a", fix=False, change=delete)
    assert not gone.passed and gone.evidence["FAIL_TO_PASS"] == {F2P: "failed"}
    assert gone.evidence["summary"]["PASS_TO_PASS"] == "41/41 passed"

    def edit(ws: Path) -> None:  # the failing case taken out of the test patch's file, the rest made trivial
        (ws / "testing" / "test_iniconfig.py").write_text("def test_tokenize():\n    pass\n")
    edited = verify(task_dir, tmp_path / "b", fix=False, change=edit)
    assert not edited.passed and edited.evidence["FAIL_TO_PASS"] == {F2P: "failed"}

    def link(ws: Path) -> None:  # the tests' folder swapped for a link out of the workspace
        shutil.rmtree(ws / "testing")
        os.symlink("/etc", ws / "testing")
    linked = verify(task_dir, tmp_path / "c", fix=True, change=link)
    assert linked.passed, linked.evidence  # the link is gone, the real tests ran in a real folder


def test_an_agent_pytest_ini_beside_the_tests_is_not_read(task_dir: Path, tmp_path: Path) -> None:
    def plant(ws: Path) -> None:
        (ws / "testing" / "pytest.ini").write_text("[pytest]\npython_functions = nomatch_*\n")
    p = verify(task_dir, tmp_path, fix=False, change=plant)
    assert not p.passed and p.evidence["FAIL_TO_PASS"] == {F2P: "failed"} and p.evidence["ran"] == 42


def test_a_named_test_that_does_not_exist_fails_never_skips(task_dir: Path, tmp_path: Path) -> None:
    ghost = "testing/test_iniconfig.py::test_no_such_test"
    p = verify(task_dir, tmp_path / "a", fix=True, pred={"pass_to_pass": [ghost, "testing/test_gone.py::test_x"]})
    assert not p.passed
    assert p.evidence["PASS_TO_PASS"] == {ghost: "missing", "testing/test_gone.py::test_x": "missing"}
    assert p.evidence["FAIL_TO_PASS"] == {F2P: "passed"}


def test_a_gate_that_ran_no_test_does_not_pass(task_dir: Path, tmp_path: Path) -> None:
    p = verify(task_dir, tmp_path, fix=True, pred={"fail_to_pass": ["testing/test_gone.py::test_x"],
                                                     "pass_to_pass": []})
    assert not p.passed and p.evidence["ran"] == 0 and "ran nothing" in p.evidence["error"]


def test_both_pytest_graders_name_forged_reports_in_one_wording() -> None:
    from assay.verify.pytest_verdict import forgery_signs

    assert forgery_signs([], [], 0, finished=True, exit_code=1) == []
    signs = forgery_signs(["t::s"], ["t::a:call"], 2, finished=False, exit_code=0)
    assert signs == ["sentinel test(s) known to fail were reported passed: ['t::s']", "reports repeated: ['t::a:call']",
                     "2 report line(s) with a wrong nonce", "the process exited 0 before pytest finished its session"]
    assert forgery_signs([], [], 0, finished=False, exit_code=1) == []  # a crash is no forgery
