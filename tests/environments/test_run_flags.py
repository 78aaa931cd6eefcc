"""BuildKit's ``RUN`` flags, as real task Dockerfiles write them (a fetched Harbor task builds with
``RUN --network=host``; cache mounts are the common way to keep pip's and apt's caches out of an
image). Each flag is honoured as BuildKit honours it, or refused naming its line and the fix:

- ``--network=default`` and ``--network=host``: the step has the network, as every build step here;
- ``--network=none``: the step runs without any network (only a loopback);
- ``--mount=type=cache`` and ``type=tmpfs``: the target is an empty folder during the step, and
  nothing written there stays in the image (the image's own files at that path come back);
- ``--mount=type=bind`` (BuildKit's default type): a folder or file of the build context, read-only,
  at the target during the step only;
- ``--mount=type=secret`` and ``type=ssh``, ``--security``, a bind ``from=`` another image, an
  unknown flag: refused (there are no build secrets, SSH agents or other stages here)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from assay.environments.build import build
from assay.environments.plan import plan_for
from assay.environments.store import ImageStore
from assay.spec.environment import EnvironmentSpec
from assay.spec.environment_dockerfile import DockerfileError, parse
from tests.environments.conftest import shared_env


def _steps(tmp_path: Path, body: str):  # noqa: ANN202
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\n" + body)
    return [s for s in parse(tmp_path / "Dockerfile").steps if s.kind == "run"]


def test_network_default_and_host_are_every_build_steps_network(tmp_path: Path) -> None:
    plain, host, default = _steps(tmp_path, "RUN echo a\nRUN --network=host echo a\nRUN --network=default echo a\n")
    assert host.argv == plain.argv == default.argv == ("/bin/sh", "-c", "echo a")
    assert host.network and default.network and plain.network


def test_network_none_is_a_step_without_the_network(tmp_path: Path) -> None:
    (step,) = _steps(tmp_path, "RUN --network=none echo a\n")
    assert step.argv == ("/bin/sh", "-c", "echo a") and step.network is False


@pytest.mark.parametrize(("flag", "words"), [
    ("--mount=type=secret,id=npmrc,target=/root/.npmrc", "type=secret"),
    ("--mount=type=ssh", "type=ssh"),
    ("--security=insecure", "--security"),
    ("--mount=type=bind,from=builder,source=/out,target=/in", "from=builder"),
    ("--mount=type=cache", "target"),  # a mount without a target
    ("--mount=type=bind,source=../up,target=/in", "leaves the build context"),
    ("--mount=type=cache,target=/", "/"),
    ("--network=bridge2", "--network=bridge2"),
    ("--frobnicate", "--frobnicate"),
])
def test_flags_that_cannot_be_honoured_are_refused_naming_the_line(tmp_path: Path, flag: str, words: str) -> None:
    with pytest.raises(DockerfileError) as e:
        _steps(tmp_path, f"RUN true\nRUN {flag} echo a\n")
    assert e.value.line == 3 and words in str(e.value), str(e.value)


def test_mounts_are_read_with_their_targets(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (step,) = _steps(tmp_path, "RUN --mount=type=cache,target=/root/.cache/pip,sharing=locked "
                               "--mount=type=bind,source=data,target=/mnt/data --mount=target=/ctx "
                               "--network=none pip --version\n")
    assert step.argv == ("/bin/sh", "-c", "pip --version") and step.network is False
    assert [(m.kind, m.target, m.source) for m in step.mounts] == [
        ("cache", "/root/.cache/pip", ""), ("bind", "/mnt/data", "data"), ("bind", "/ctx", ".")]


def test_flags_before_a_heredoc_keep_its_body_as_the_script(tmp_path: Path) -> None:
    (step,) = _steps(tmp_path, "ARG CACHE=/root/.cache\nRUN --mount=type=cache,target=$CACHE <<EOF\n"
                               "echo one > /o\necho two >> /o\nEOF\n")
    assert step.argv == ("/bin/sh", "-c", "echo one > /o\necho two >> /o\n")
    assert [m.target for m in step.mounts] == ["/root/.cache"]  # the flag's variable substituted


def test_the_flags_are_honoured_in_a_real_build(image_store: ImageStore, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x").write_text("from the context\n")
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm\n"
        "RUN mkdir -p /cache && echo image > /cache/orig\n"
        "RUN --mount=type=cache,target=/cache ls -A /cache > /seen-in-cache && echo build > /cache/made\n"
        "RUN --mount=type=tmpfs,target=/scratch touch /scratch/t && ls /scratch > /seen-in-tmpfs\n"
        "RUN --network=none cut -d: -f1 /proc/net/dev | tail -n +3 | tr -d ' ' > /netdev-none\n"
        "RUN --mount=type=bind,source=data,target=/mnt/data cat /mnt/data/x > /bound "
        "&& (touch /mnt/data/y 2>/dev/null && echo writable || echo read-only) > /bound-mode\n")
    plan = plan_for("flags", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    plan = dataclasses.replace(plan, base=plan_for("s", tmp_path, shared_env()).base)  # the shared base
    info = build(image_store, plan)
    try:
        root = image_store.rootfs(info.digest)
        assert (root / "seen-in-cache").read_text() == ""  # the cache hid the image's own files
        assert (root / "cache" / "orig").read_text() == "image\n" and not (root / "cache" / "made").exists()
        assert (root / "seen-in-tmpfs").read_text() == "t\n" and not (root / "scratch" / "t").exists()
        assert (root / "netdev-none").read_text().split() == ["lo"]
        assert (root / "bound").read_text() == "from the context\n"
        assert (root / "bound-mode").read_text() == "read-only\n"
        assert not (root / "mnt" / "data" / "x").exists()  # the bind was the step's only
        assert not (tmp_path / "data" / "y").exists()
    finally:
        image_store.remove(info.digest)


def test_a_network_none_step_that_needs_an_interface_fails_the_build(image_store: ImageStore, tmp_path: Path) -> None:
    from assay.environments.build import BuildFailed

    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm\nRUN --network=none test $(tail -n +3 /proc/net/dev | wc -l) -gt 1\n")
    plan = plan_for("nonet", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    plan = dataclasses.replace(plan, base=plan_for("s", tmp_path, shared_env()).base)
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert e.value.where == "line 2"


def test_the_flags_enter_the_image_digest_and_plain_steps_keep_theirs(tmp_path: Path) -> None:
    def digest(body: str) -> str:
        (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\n" + body)
        return plan_for("d", tmp_path, EnvironmentSpec(dockerfile="Dockerfile")).digest

    plain = digest("RUN echo a\n")
    assert digest("RUN --network=host echo a\n") == plain  # the same build here
    assert digest("RUN --network=none echo a\n") != plain
    assert digest("RUN --mount=type=cache,target=/c echo a\n") != plain
