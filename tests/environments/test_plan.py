"""An image's digest covers its base, its steps and the content of what it copies, nothing else;
a FROM that cannot be fetched here maps to a Debian base, recorded as a deviation."""

from __future__ import annotations

import shutil
from pathlib import Path

from assay.environments.plan import PYTHON_PACKAGES, plan_for
from assay.spec.environment import EnvironmentSpec

DOCKER = EnvironmentSpec(dockerfile="Dockerfile")


def _task(root: Path, dockerfile: str, data: str = "x") -> Path:
    root.mkdir(parents=True)
    (root / "Dockerfile").write_text(dockerfile)
    (root / "data.txt").write_text(data)
    return root


def test_equal_inputs_anywhere_name_the_same_image(tmp_path: Path) -> None:
    text = "FROM debian:bookworm\nCOPY data.txt /opt/\nRUN true\n"
    a = plan_for("a", _task(tmp_path / "one", text), DOCKER)
    b = plan_for("b", _task(tmp_path / "elsewhere" / "two", text), DOCKER)
    assert a.digest == b.digest and a.base.digest == b.base.digest


def test_a_copied_files_content_a_step_or_a_package_changes_the_digest(tmp_path: Path) -> None:
    text = "FROM debian:bookworm\nCOPY data.txt /opt/\nRUN true\n"
    base = plan_for("a", _task(tmp_path / "a", text), DOCKER)
    other_data = plan_for("a", _task(tmp_path / "b", text, data="y"), DOCKER)
    other_step = plan_for("a", _task(tmp_path / "c", text.replace("true", "false")), DOCKER)
    assert len({base.digest, other_data.digest, other_step.digest}) == 3
    assert base.base.digest == other_data.base.digest  # the base is shared
    steps = EnvironmentSpec(base="debian:bookworm", packages=["jq"])
    more = EnvironmentSpec(base="debian:bookworm", packages=["jq", "gawk"])
    assert plan_for("s", tmp_path, steps).base.digest != plan_for("s", tmp_path, more).base.digest


def test_a_from_that_cannot_be_fetched_is_mapped_and_said(tmp_path: Path) -> None:
    exact = plan_for("a", _task(tmp_path / "a", "FROM debian:bookworm-slim\n"), DOCKER)
    assert exact.deviations == ()
    py = plan_for("b", _task(tmp_path / "b", "FROM python:3.13-slim\n"), DOCKER)
    assert set(PYTHON_PACKAGES) <= set(py.base.packages)
    assert "FROM python:3.13-slim mapped to debian:bookworm" in py.deviations[0]
    other = plan_for("c", _task(tmp_path / "c", "FROM ghcr.io/bench/own-base:2025\nUSER agent\n"), DOCKER)
    assert any("ghcr.io/bench/own-base:2025 mapped" in d for d in other.deviations)
    assert any("USER agent" in d for d in other.deviations)


def test_runtime_facts_come_from_the_last_env_workdir_and_user(tmp_path: Path) -> None:
    p = plan_for("a", _task(tmp_path / "a", "FROM debian:bookworm\nENV A=1\nWORKDIR /app\nENV B=2\nUSER root\n"),
                 DOCKER)
    assert dict(p.env) == {"A": "1", "B": "2"} and p.workdir == "/app" and p.user == "root"
    shutil.rmtree(tmp_path / "a")
