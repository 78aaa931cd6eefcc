"""Building into the store: a cached image costs one digest check; a failing step, a package
that does not exist or a build past its time is refused naming its file and line with the build
log's tail, and nothing half-built ever enters the store; two builds of one image at once are safe."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from assay.environments.build import BuildFailed, build
from assay.environments.plan import plan_for
from assay.environments.store import ImageStore
from assay.errors import SpecError
from assay.run import RunOptions, start_run
from assay.spec.environment import EnvironmentSpec
from tests.environments.conftest import SHARED_PACKAGES, shared_env


def _unfinished(store: ImageStore) -> list[Path]:
    building = store.root / ".building"
    return [p for p in building.iterdir() if p.name.startswith("build-")] if building.is_dir() else []


def test_a_cached_image_is_one_digest_check(example_images, image_store: ImageStore) -> None:  # noqa: ANN001
    suite, images = example_images
    task = suite.task("pip-pandas")
    assert task.spec.environment is not None
    plan = plan_for(task.id, task.dir, task.spec.environment)
    again = build(image_store, plan, progress=lambda stage, detail: pytest.fail(f"rebuilt: {stage} {detail}"))
    assert again == images["pip-pandas"]


def test_a_failing_run_step_is_refused_with_its_line_and_log(image_store: ImageStore, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\nENV A=1\nRUN echo building-$A && false\n")
    env = EnvironmentSpec(dockerfile="Dockerfile")
    plan = plan_for("failing", tmp_path, env)
    plan = dataclasses.replace(plan, base=plan_for("s", tmp_path, shared_env()).base)  # the shared base
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert e.value.file == tmp_path / "Dockerfile" and e.value.where == "line 3"
    assert "exit 1" in e.value.message and "building-1" in e.value.tail
    assert e.value.log is not None and e.value.log.is_file()
    assert image_store.get(plan.digest) is None and not image_store.path(plan.digest).exists()


def test_an_apt_package_that_does_not_exist_is_refused(image_store: ImageStore, tmp_path: Path) -> None:
    env = shared_env(steps=["apt-get update -qq && apt-get install -y assay-no-such-package"])
    plan = plan_for("nopkg", tmp_path, env, tmp_path / "task.yaml")
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert e.value.where == "environment.steps[0]" and "Unable to locate package assay-no-such-package" in e.value.tail
    assert image_store.get(plan.digest) is None


def test_a_base_package_that_does_not_exist_is_refused(image_store: ImageStore, tmp_path: Path) -> None:
    env = EnvironmentSpec(base="debian:bookworm", packages=[*SHARED_PACKAGES, "assay-no-such-package"])
    plan = plan_for("nobase", tmp_path, env, tmp_path / "task.yaml")
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert e.value.where == "environment.packages" and "assay-no-such-package" in e.value.tail
    # the task's packages are a step on the one shared base: the base stands, the image never enters
    assert image_store.get(plan.base.digest) is not None and image_store.get(plan.digest) is None


def test_a_build_past_its_timeout_is_killed_and_refused(image_store: ImageStore, tmp_path: Path) -> None:
    # no packages of its own: the shared base and the step alone (an apt step would take the 3 s)
    env = EnvironmentSpec(base="debian:bookworm", steps=["echo started; sleep 300"], build_timeout_s=3)
    plan = plan_for("slow", tmp_path, env, tmp_path / "task.yaml")
    t0 = time.monotonic()
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert time.monotonic() - t0 < 60  # killed, not waited for
    assert "build_timeout_s" in e.value.message and "started" in e.value.tail
    assert image_store.get(plan.digest) is None


def test_no_trial_runs_when_an_image_does_not_build(image_store: ImageStore, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    t = suite / "tasks" / "t"
    t.mkdir(parents=True)
    (suite / "suite.yaml").write_text("name: s\nversion: '1'\ncategories: [{id: c}]\n")
    (t / "task.yaml").write_text("category: c\npredicates: [{id: p, kind: file_exists, path: x}]\nenvironment:\n"
                                 f"  base: debian:bookworm\n  packages: {json.dumps(SHARED_PACKAGES)}\n"
                                 "  steps: ['echo step-output; exit 7']\n")
    (t / "prompt.md").write_text("do it\n")
    with pytest.raises(SpecError) as e:
        start_run(RunOptions(suite=suite, agents=["oracle"], out=tmp_path / "run", max_retries=0))
    p, hint = e.value.problems  # the failure, then the flag that runs the other tasks
    assert "--exclude t" in hint.fix
    assert p.file == str(t / "task.yaml") and p.field == "environment.steps[0]"
    assert "exit 7" in p.message and "step-output" in p.message
    assert not (tmp_path / "run").exists()


def test_two_builds_of_one_image_at_once_build_it_once(image_store: ImageStore, tmp_path: Path) -> None:
    marker = f"concurrent-{os.getpid()}-{time.time_ns()}"
    script = textwrap.dedent(f"""
        import json, sys
        from pathlib import Path
        from assay.environments.build import build
        from assay.environments.plan import plan_for
        from assay.environments.store import ImageStore
        from tests.environments.conftest import shared_env
        plan = plan_for("twice", Path({str(tmp_path)!r}), shared_env(steps=["echo {marker} > /marker; sleep 2"]))
        info = build(ImageStore(Path({str(image_store.root)!r})), plan)
        print(json.dumps([info.digest, info.created_at]))
    """)
    root = Path(__file__).resolve().parents[2]
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=root, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=300)[0].strip().splitlines()[-1]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert outs[0] == outs[1]  # the same digest, and the same build (one built, the other waited)
    digest = outs[0][0]
    assert (image_store.rootfs(digest) / "marker").read_text().strip() == marker
    log = (image_store.path(digest) / "build.log").read_text()
    assert log.count("environment.steps[0]") == 1
    image_store.remove(digest)
    # nothing of these two builds is left half-built (another test may be building beside it)
    ours = [p for p in _unfinished(image_store) if marker in ((p / "build.log").read_text(errors="replace")
                                                             if (p / "build.log").is_file() else "")]
    assert ours == []


def test_a_backend_that_cannot_run_over_an_image_is_refused(tmp_path: Path) -> None:
    from assay.errors import UsageError
    from tests.environments.conftest import EXAMPLES

    with pytest.raises(UsageError, match="--sandbox host cannot"):
        start_run(RunOptions(suite=EXAMPLES, agents=["oracle"], out=tmp_path / "run", sandbox="host"))
    assert not (tmp_path / "run").exists()


def test_user_runs_later_steps_as_that_user_and_names_the_agent(image_store: ImageStore, tmp_path: Path) -> None:
    from assay.environments.runtime import root_of

    (tmp_path / "Dockerfile").write_text(  # a python FROM: the example /app task's base, already built
        "FROM python:3.11-slim\nRUN mkdir /data && chmod 777 /data\nUSER nobody\nRUN id -un > /data/who\n")
    plan = plan_for("user", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    info = build(image_store, plan)
    try:
        assert (image_store.rootfs(info.digest) / "data" / "who").read_text().strip() == "nobody"
        assert info.user == "nobody" and any("USER nobody" in d for d in info.deviations)
        assert root_of(info, image_store).user == "nobody"
    finally:
        image_store.remove(info.digest)


def test_each_task_records_its_own_deviations_over_a_shared_image(image_store: ImageStore, tmp_path: Path) -> None:
    """Two Dockerfiles that build the same image (one digest) but are read differently: a `FROM
    ubuntu` mapped to Debian, a `CMD` not run. Each task's record names its own deviations, not
    those of whichever task happened to build the image first."""
    from assay.environments.runtime import record, root_of

    exact, mapped = tmp_path / "exact", tmp_path / "mapped"
    for d, text in ((exact, "FROM debian:bookworm\nRUN echo shared > /opt/shared\n"),
                    (mapped, "FROM ubuntu:24.04\nRUN echo shared > /opt/shared\nCMD [\"bash\"]\n")):
        d.mkdir()
        (d / "Dockerfile").write_text(text)
    first = build(image_store, plan_for("exact", exact, EnvironmentSpec(dockerfile="Dockerfile")))
    try:
        second = build(image_store, plan_for("mapped", mapped, EnvironmentSpec(dockerfile="Dockerfile")))
        assert first.digest == second.digest  # one image in the store
        assert record(first, "exact").deviations == [] and root_of(first, image_store).deviations == ()
        said = record(second, "mapped").deviations
        assert any("FROM ubuntu:24.04" in d for d in said) and any("Dockerfile:3: CMD" in d for d in said), said
        assert root_of(second, image_store).deviations == tuple(said)
        # and the other way round: the exact task, found in the store the mapped one built
        again = build(image_store, plan_for("exact", exact, EnvironmentSpec(dockerfile="Dockerfile")))
        assert record(again, "exact").deviations == []
    finally:
        image_store.remove(first.digest)


def test_a_python_image_has_the_python_command(image_store: ImageStore, tmp_path: Path) -> None:
    """Python's official images answer to `python` (and `pip`); Debian's python3 does not. A
    `FROM python:*` task that runs `python x.py` in a RUN step, its test.sh or its solve.sh (all
    105 tasks of a fetched multimedia collection; a fetched task's solve.sh ending in
    `python -c ...` exited 127) gets `python` as python3, said with the mapping."""
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nRUN python -c \"print('from python')\" > /opt/py\n")
    plan = plan_for("py", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    assert "`python` as python3" in plan.deviations[0]
    info = build(image_store, plan)
    try:
        root = image_store.rootfs(info.digest)
        assert (root / "opt" / "py").read_text() == "from python\n"
        assert os.readlink(root / "usr" / "bin" / "python") == "python3" and (root / "usr" / "bin" / "pip").exists()
    finally:
        image_store.remove(info.digest)
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN true\n")  # not a Python image: no alias
    assert not any("python" in " ".join(o.argv) for o in plan_for("u", tmp_path, EnvironmentSpec(
        dockerfile="Dockerfile")).ops)
