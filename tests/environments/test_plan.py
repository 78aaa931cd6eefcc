"""An image's digest covers its base, its steps and the content of what it copies, nothing else;
a FROM that cannot be fetched here maps to a Debian base, recorded as a deviation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.environments.plan import PYTHON_PACKAGES, plan_for
from assay.spec.environment import EnvironmentSpec
from assay.spec.load import load_suite

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
    one, two = plan_for("s", tmp_path, steps), plan_for("s", tmp_path, more)
    assert one.digest != two.digest  # a package changes the image ...
    assert one.base.digest == two.base.digest == base.base.digest  # ... never the one shared base


def test_every_shipped_suite_and_import_fixture_shares_one_base_per_release(tmp_path: Path) -> None:
    """One base per release for the example suites and the importers' fixtures alike (one
    mmdebstrap per release per CI run): the declared packages are a step on it. A Python 3.12 or
    3.13 image is on trixie, whose Python that is (test_releases.py)."""
    from assay.environments.runtime import plan_of

    root = Path(__file__).resolve().parents[2]
    suite = load_suite(root / "examples" / "environments")
    bases = {(p.base.release, p.base.digest) for p in (plan_of(t) for t in suite.tasks) if p is not None}
    from assay.spec.environment_dockerfile import DockerfileError

    built = 0
    for df in sorted((root / "tests" / "fixtures" / "import").rglob("Dockerfile")):
        task = df.parent.parent
        try:
            plan = plan_for(task.name, task, EnvironmentSpec(dockerfile=str(df.relative_to(task)),
                                                             context=str(df.parent.relative_to(task)),
                                                             base="debian:bookworm"))
        except DockerfileError:
            continue  # a task the importer refuses (EXPOSE, several containers): never built
        bases.add((plan.base.release, plan.base.digest))
        built += 1
    releases = [r for r, _ in bases]
    assert built >= 3 and sorted(releases) == sorted(set(releases)) == ["bookworm", "trixie"], bases


def test_a_from_that_cannot_be_fetched_is_mapped_and_said(tmp_path: Path) -> None:
    exact = plan_for("a", _task(tmp_path / "a", "FROM debian:bookworm-slim\n"), DOCKER)
    assert exact.deviations == ()
    py = plan_for("b", _task(tmp_path / "b", "FROM python:3.13-slim\n"), DOCKER)
    assert set(PYTHON_PACKAGES) <= set(py.base.packages)
    assert "FROM python:3.13-slim mapped to debian:trixie" in py.deviations[0]
    other = plan_for("c", _task(tmp_path / "c", "FROM ghcr.io/bench/own-base:2025\nUSER agent\n"), DOCKER)
    assert any("ghcr.io/bench/own-base:2025 mapped" in d for d in other.deviations)
    assert any("USER agent" in d for d in other.deviations)


def test_runtime_facts_come_from_the_last_env_workdir_and_user(tmp_path: Path) -> None:
    p = plan_for("a", _task(tmp_path / "a", "FROM debian:bookworm\nENV A=1\nWORKDIR /app\nENV B=2\nUSER root\n"),
                 DOCKER)
    assert dict(p.env) == {"A": "1", "B": "2"} and p.workdir == "/app" and p.user == "root"
    shutil.rmtree(tmp_path / "a")


@pytest.mark.parametrize(("image", "packages", "says", "release"), [
    ("node:20-slim@sha256:" + "0" * 64, ("nodejs", "npm"), "Node.js", "trixie"),
    ("docker.io/library/node:18", ("nodejs", "npm"), "Node.js", "bookworm"),
    ("golang:1.22-bookworm", ("golang-go",), "Go", "trixie"),
    ("rust:1.79", ("rustc", "cargo"), "Rust", "trixie"),
    ("eclipse-temurin:21-jdk", ("default-jdk-headless",), "Java", "trixie"),
    ("ruby:3.1", ("ruby",), "Ruby", "bookworm"),
])
def test_a_language_runtime_image_maps_to_debians_runtime(tmp_path: Path, image: str, packages: tuple[str, ...],
                                                          says: str, release: str) -> None:
    """A `FROM node:20-slim` (a fetched Harbor task's) mapped to bare Debian had no `npm`, and its
    build failed at `npm install`; like a Python image, a language's official image maps to
    Debian's packages of that language, installed as the image's first step, the version said
    to differ."""
    plan = plan_for("t", _task(tmp_path / "t", f"FROM {image}\nRUN true\n"), DOCKER)
    first = " ".join(plan.ops[0].argv)
    assert "apt-get install" in first and all(p in first.split() for p in packages), first
    assert f"FROM {image} mapped to debian:{release} with Debian's {', '.join(packages)}" in plan.deviations[0]
    assert f"Debian {release}'s {says} is " in plan.deviations[0]
