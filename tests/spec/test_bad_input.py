"""Bad suites are refused at load with the file, the field and the fix: exit 2, nothing written,
no traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from assay.errors import SpecError
from assay.spec.load import load_suite
from tests.conftest import write_suite, write_task, run_assay

PRED = {"id": "x", "kind": "file_exists", "path": "out.txt"}


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


def refused(suite: Path, tmp_path: Path, *needles: str, extra: tuple[str, ...] = ()) -> str:
    """Run the suite through the real CLI and assert the refusal; returns stderr."""
    out = tmp_path / "run-out"
    proc = assay("run", str(suite), "--agent", "nop", "--sandbox", "host", "--out", str(out), *extra)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in proc.stderr, (n, proc.stderr)
    assert not out.exists()  # nothing written
    return proc.stderr


def test_non_utf8_prompt(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    d = write_task(s, "t", task={"category": "code", "predicates": [PRED]})
    (d / "prompt.md").write_bytes(b"Fix the caf\xe9 menu.\n")
    refused(s, tmp_path, "prompt.md", "not UTF-8", "save the file as UTF-8")


def test_non_utf8_variant_prompt_file(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    d = write_task(s, "t", task={"category": "code", "predicates": [PRED],
                                 "variants": [{"id": "v", "prompt_file": "v.md"}]})
    (d / "v.md").write_bytes(b"\xff\xfe")
    refused(s, tmp_path, "v.md", "not UTF-8")


@pytest.mark.parametrize("pred,field", [
    ({"id": "a", "kind": "file_exists", "path": "../../../etc/passwd"}, "predicates.0.path"),
    ({"id": "a", "kind": "file_absent", "path": "/etc/shadow"}, "predicates.0.path"),
    ({"id": "a", "kind": "file_contains", "path": "sub/../../x", "text": "y"}, "predicates.0.path"),
    ({"id": "a", "kind": "pytest", "tests": "../../other-task/hidden"}, "predicates.0.tests"),
    ({"id": "a", "kind": "file_equals", "path": "a", "expected_file": "../task.yaml"}, "predicates.0.expected_file"),
    ({"id": "a", "kind": "unchanged", "paths": ["ok/**", "../**"]}, "predicates.0.paths.1"),
])
def test_path_traversal_in_predicates_refused_at_load(tmp_path: Path, pred: dict, field: str) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [pred]}, hidden={"tests/test_a.py": "def test_a(): pass\n"})
    with pytest.raises(SpecError) as e:
        load_suite(s)
    assert any(p.field == field and "leaves" in p.message for p in e.value.problems), e.value.problems
    refused(s, tmp_path, field, "leaves")


def test_inside_paths_still_load(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [
        {"id": "a", "kind": "file_exists", "path": "sub/../out.txt"},
        {"id": "b", "kind": "unchanged", "paths": ["./src/**"]}]})
    assert load_suite(s).tasks[0].id == "t"


def test_tasks_dir_outside_the_suite(tmp_path: Path) -> None:
    (tmp_path / "elsewhere" / "t").mkdir(parents=True)
    s = write_suite(tmp_path / "s", tasks_dir="../elsewhere")
    refused(s, tmp_path, "tasks_dir", "leaves the suite folder")


def test_workspace_symlink_out_of_the_suite(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    s = write_suite(tmp_path / "s")
    d = write_task(s, "t", task={"category": "code", "predicates": [PRED]}, hidden={"answer.txt": "42"},
                   workspace={"real.txt": "fine"})
    os.symlink(secret, d / "workspace" / "leak.txt")
    os.symlink("../hidden/answer.txt", d / "workspace" / "peek.txt")  # inside the suite, outside the workspace
    os.symlink("real.txt", d / "workspace" / "alias.txt")  # stays in the workspace: allowed
    err = refused(s, tmp_path, "leak.txt", "peek.txt", "points out of the workspace")
    assert "alias.txt" not in err
    (d / "workspace" / "leak.txt").unlink()
    (d / "workspace" / "peek.txt").unlink()
    assert load_suite(s).tasks[0].id == "t"


def test_duplicate_task_ids_name_both_folders(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"id": "same", "category": "code", "predicates": [PRED]})
    write_task(s, "two", task={"id": "same", "category": "code", "predicates": [PRED]})
    err = refused(s, tmp_path, "'same'")
    flat = " ".join(err.split())
    assert str(s / "tasks" / "one") in flat and str(s / "tasks" / "two") in flat


def test_harness_network_needed_under_network_none(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [PRED]})
    refused(s, tmp_path, "--network none", "model gateway", extra=("--network", "none", "--model", "scripted"))
    ok = assay("run", str(s), "--agent", "nop", "--sandbox", "host", "--network", "none", "--out", str(tmp_path / "r"), "-q")
    assert ok.returncode == 0, ok.stderr  # a task needing nothing from the harness runs


def test_task_with_worlds_under_network_none(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "w", task={"category": "code", "predicates": [PRED], "worlds": {"ledger": {"categories": ["food"]}}})
    refused(s, tmp_path, "task 'w'", "worlds", extra=("--network", "none"))


def test_resume_with_zero_jobs(tmp_path: Path) -> None:
    proc = assay("run", "--resume", str(tmp_path), "-j", "0")
    assert proc.returncode == 2 and "--jobs" in proc.stderr and "Traceback" not in proc.stderr


def test_a_file_that_is_not_suite_yaml_is_named_not_its_folder(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "predicates": [PRED]})
    assert load_suite(s / "suite.yaml").spec == load_suite(s).spec  # the suite's own file: its folder
    stray = s / "notes.txt"
    stray.write_text("not a suite\n")
    with pytest.raises(SpecError) as e:  # it loaded the suite beside it, as if the file were suite.yaml
        load_suite(stray)
    assert str(stray) in str(e.value) and "suite.yaml" in str(e.value)
    for command in ("validate", "lint"):
        proc = assay(command, str(stray))
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and str(stray) in proc.stderr, proc.stderr


@pytest.mark.parametrize("where", ["prompt_file", "workspace", "predicate", "environment"])
def test_a_nul_character_in_a_task_file_is_named_not_a_crash(tmp_path: Path, where: str) -> None:
    """A YAML ``"\\0"`` in a path crashed the loader with ``ValueError: embedded null byte`` (a
    random mutation of the example suites found it)."""
    s = write_suite(tmp_path / "suite")
    task: dict = {"category": "code", "predicates": [PRED]}
    field = {"prompt_file": "prompt_file", "workspace": "workspace", "predicate": "predicates.0.path",
             "environment": "environment.dockerfile"}[where]
    if where == "predicate":
        task["predicates"] = [{**PRED, "path": "out\x00.txt"}]
    elif where == "environment":
        task["environment"] = {"dockerfile": "Docker\x00file"}
    else:
        task[where] = "a\x00b"
    write_task(s, "t", task=task)
    with pytest.raises(SpecError) as e:
        load_suite(s)
    assert any(p.field == field and "NUL" in p.message for p in e.value.problems), e.value.problems


@pytest.mark.parametrize("field", ["prompt_file", "workspace", "setup_files.0", "environment.dockerfile"])
def test_a_path_too_long_for_the_file_system_is_named_not_a_crash(tmp_path: Path, field: str) -> None:
    """A 5,000-character path crashed the loader with ``OSError: File name too long``."""
    s = write_suite(tmp_path / "suite")
    long = "x" * 5000
    task: dict = {"category": "code", "predicates": [PRED]}
    if field == "setup_files.0":
        task.update(setup="setup.sh", setup_files=[long])
    elif field == "environment.dockerfile":
        task["environment"] = {"dockerfile": long}
    else:
        task[field] = long
    write_task(s, "t", task=task, files={"setup.sh": "true\n"})
    with pytest.raises(SpecError) as e:
        load_suite(s)
    assert any(p.field == field for p in e.value.problems), e.value.problems


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(("where", "field"), [
    ("suite", "categories.0.weight"), ("task", "verifier_timeout_s"), ("predicate", "predicates.0.file_exists.weight"),
    ("tolerance", "predicates.0.json_value.tolerance"), ("metadata", "metadata.expert_time_min")])
@pytest.mark.parametrize("value", [INF, NAN])
def test_a_number_that_is_not_finite_is_refused_naming_the_field(tmp_path: Path, where: str, field: str,
                                                                value: float) -> None:
    """YAML reads ``.inf`` and ``.nan`` as floats. A category weight of ``.inf`` passed ``weight > 0``,
    and the run then failed to read back the manifest it wrote (exit 3: the run directory blamed for
    the suite's typo); a ``.inf`` timeout or tolerance was taken as given. Every number of a suite
    or task file is finite, or the file is refused (exit 2) naming the field."""
    s = write_suite(tmp_path / "s", categories=[{"id": "code", "weight": value if where == "suite" else 1}])
    pred: dict = dict(PRED)
    task: dict = {"category": "code", "predicates": [pred]}
    if where == "task":
        task["verifier_timeout_s"] = value
    elif where == "predicate":
        pred["weight"] = value
    elif where == "tolerance":
        task["predicates"] = [{"id": "x", "kind": "json_value", "path": "out.json", "expect": {"/a": 1},
                               "tolerance": value}]
    elif where == "metadata":
        task["metadata"] = {"expert_time_min": value}
    write_task(s, "t", task=task)
    err = refused(s, tmp_path, field, "finite")
    assert ("suite.yaml" if where == "suite" else "task.yaml") in err
