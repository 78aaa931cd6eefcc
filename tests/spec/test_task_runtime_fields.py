"""The run-time task fields refused at load with the file, the field and the fix (exit 2 from
the CLI, nothing written): workdir, env, network, empty_dirs, limits.cpus, storage_mb,
build_timeout_s and scripts' #! lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.errors import SpecError
from assay.spec.budget import NetworkProfile
from assay.spec.load import load_suite
from tests.conftest import write_suite, write_task
from tests.spec.test_bad_input import refused

PRED = {"id": "x", "kind": "file_exists", "path": "out.txt"}


def suite_with(tmp_path: Path, **task) -> Path:
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [PRED], **task}, solution="true\n")
    return s


@pytest.mark.parametrize("fields,field,needle", [
    ({"workdir": "app"}, "workdir", "absolute path"),
    ({"workdir": "/app/../etc"}, "workdir", "normalised"),
    ({"workdir": "/usr/local/app"}, "workdir", "under /usr"),
    ({"workdir": "/"}, "workdir", "which the system"),
    ({"workdir": "/tmp/w"}, "workdir", "under /tmp"),
    ({"env": {"agent": {"A": "1"}, "B": "2"}}, "env", "mixes variables and roles"),
    ({"env": {"tester": {"A": "1"}}}, "env.tester", "unknown field"),
    ({"env": {"1BAD": "x"}}, "env", "not an environment variable name"),
    ({"env": {"ASSAY_WORKSPACE": "/x"}}, "env", "harness's own"),
    ({"env": {"A": ["x"]}}, "env", "string or a number"),
    ({"network": "host"}, "network", "never widen"),
    ({"network": "internet"}, "network", "use one of"),
    ({"allow_internet": "yes"}, "", "allow_internet must be true or false"),
    ({"empty_dirs": ["/abs"]}, "empty_dirs", "relative"),
    ({"empty_dirs": ["a/../../x"]}, "empty_dirs", "leaves the workspace"),
    ({"limits": {"cpus": 0}}, "limits.cpus", "greater than 0"),
    ({"limits": {"storage_mb": 10, "disk_mb": 20}}, "limits", "storage_mb and disk_mb"),
    ({"build_timeout_s": -1}, "build_timeout_s", "greater than 0"),
])
def test_bad_runtime_field_refused_at_load(tmp_path: Path, fields: dict, field: str, needle: str) -> None:
    s = suite_with(tmp_path, **fields)
    with pytest.raises(SpecError) as e:
        load_suite(s)
    rendered = [p.render() for p in e.value.problems]
    assert any("task.yaml" in r and (not field or f": {field}" in r) and needle in r for r in rendered), rendered


def test_bad_workdir_refused_by_the_cli(tmp_path: Path) -> None:
    refused(suite_with(tmp_path, workdir="relative/dir"), tmp_path, "task.yaml", "workdir", "absolute path")


def test_network_none_with_a_world_refused(tmp_path: Path) -> None:
    s = suite_with(tmp_path, network="none", worlds={"tickets": {}})
    with pytest.raises(SpecError) as e:
        load_suite(s)
    assert any("network: none" in p.render() and "worlds" in p.render() for p in e.value.problems)


def test_shebang_naming_a_relative_interpreter_refused(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [PRED], "setup": "setup.sh"},
               files={"setup.sh": "#!bash\necho hi\n"}, solution="#!\ntrue\n")
    with pytest.raises(SpecError) as e:
        load_suite(s)
    text = "\n".join(p.render() for p in e.value.problems)
    assert ": setup:" in text and "not an absolute path" in text and "fix:" in text, text
    assert ": solution:" in text and "names no interpreter" in text, text


def test_empty_dir_over_a_fixture_file_or_link_refused(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    d = write_task(s, "t", task={"category": "code", "predicates": [PRED], "empty_dirs": ["data/x", "out/x"]},
                   workspace={"data": "a file\n", "real/keep": "k\n"}, solution="true\n")
    os.symlink("real", d / "workspace" / "out")  # inside the workspace: allowed, but never made through
    with pytest.raises(SpecError) as e:
        load_suite(s)
    fields = {p.field for p in e.value.problems}
    assert fields == {"empty_dirs.0", "empty_dirs.1"}, [p.render() for p in e.value.problems]


def test_good_fields_load(tmp_path: Path) -> None:
    s = suite_with(tmp_path, workdir="/home/user", env={"LANGUAGE": "en", "N": 3}, allow_internet=True,
                   empty_dirs=["out/logs/"], limits={"cpus": 1.5, "storage_mb": 64}, build_timeout_s=900)
    spec = load_suite(s).tasks[0].spec
    assert spec.workdir == "/home/user" and spec.empty_dirs == ["out/logs"] and spec.build_timeout_s == 900
    assert spec.env.agent == spec.env.verifier == spec.env.solution == {"LANGUAGE": "en", "N": "3"}
    assert spec.network is NetworkProfile.harness and "allow_internet" in spec.deviations[0]
    assert spec.limits is not None and spec.limits.cpus == 1.5 and spec.limits.disk_mb == 64


@pytest.mark.parametrize("run,task,want", [
    ("harness", None, "harness"), ("harness", "none", "none"), ("none", "harness", "none"),
    ("host", "harness", "harness"), ("host", None, "host"),
])
def test_task_network_narrows_never_widens(run: str, task: str | None, want: str) -> None:
    assert NetworkProfile(run).narrowed(NetworkProfile(task) if task else None) is NetworkProfile(want)
