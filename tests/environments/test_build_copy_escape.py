"""Attack: a third-party task's Dockerfile plants a link in its own image, then copies over it.

``RUN ln -s /HOST/PATH /app`` makes ``/app`` in the image a link to a host path; a later
``COPY file /app/`` was applied by the harness on the host (the builder is root), through the
link: the task wrote into the host's file system. Every copy into the image now happens inside
the build's sandbox, whose root is the image, so a link there resolves inside the image."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from assay.environments.build import build
from assay.environments.plan import plan_for
from assay.environments.store import ImageStore
from assay.spec.environment import EnvironmentSpec
from tests.environments.conftest import shared_env


def _build(image_store: ImageStore, task: Path, text: str):  # noqa: ANN202
    (task / "Dockerfile").write_text(text)
    plan = plan_for("escape", task, EnvironmentSpec(dockerfile="Dockerfile"))
    plan = dataclasses.replace(plan, base=plan_for("s", task, shared_env()).base)
    return build(image_store, plan)


def test_a_copy_through_a_planted_link_stays_in_the_image(image_store: ImageStore, tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "dir").mkdir(parents=True)
    task = tmp_path / "task"
    (task / "tree" / "sub").mkdir(parents=True)
    (task / "payload.txt").write_text("planted\n")
    (task / "tree" / "sub" / "deep.txt").write_text("deep\n")
    info = _build(image_store, task, f"FROM debian:bookworm\nRUN ln -s {host / 'dir'} /app && mkdir /w "
                                     f"&& ln -s {host / 'dir'} /w/sub && mkdir -p /srv/real /srv/tree/sub "
                                     "&& ln -s /srv/real /data && ln -s /srv/tree/sub /v\n"
                                     "COPY payload.txt /app/\nCOPY tree /w/\nCOPY payload.txt /data/\n"
                                     "RUN mkdir /x && ln -s /srv/tree/sub /x/sub\nCOPY tree /x/\n")
    try:
        assert list(host.rglob("*")) == [host / "dir"], list(host.rglob("*"))  # nothing written on the host
        root = image_store.rootfs(info.digest)
        # inside the image a link is the image's path: the copy follows it there, as BuildKit does
        assert (root / "srv/real/payload.txt").read_text() == "planted\n"
        assert (root / "srv/tree/sub/deep.txt").read_text() == "deep\n" and (root / "x/sub").is_symlink()
    finally:
        image_store.remove(info.digest)


def test_the_seal_of_an_image_never_reaches_through_its_links(image_store: ImageStore, tmp_path: Path) -> None:
    """Attack: a build step makes `/root` a link to a host folder; sealing the image empties
    `/root/.cache` (what a build leaves by when it ran), which on the host was the host folder's
    `.cache`. The seal resolves those paths inside the image now."""
    victim = tmp_path / "victim"
    (victim / ".cache").mkdir(parents=True)
    (victim / ".cache" / "precious.txt").write_text("keep me\n")
    (tmp_path / "task").mkdir()
    info = _build(image_store, tmp_path / "task", f"FROM debian:bookworm\nRUN rm -rf /root && ln -s {victim} /root\n")
    try:
        assert (victim / ".cache" / "precious.txt").read_text() == "keep me\n"
    finally:
        image_store.remove(info.digest)


def test_a_workdir_through_a_planted_link_makes_nothing_on_the_host(image_store: ImageStore, tmp_path: Path) -> None:
    """`WORKDIR` makes its folder: on the host before, through the image's `/app -> /HOST/PATH`."""
    host = tmp_path / "host"
    host.mkdir()
    (tmp_path / "task").mkdir()
    info = _build(image_store, tmp_path / "task", f"FROM debian:bookworm\nRUN ln -s {host} /app\nWORKDIR /app/made\n")
    try:
        assert list(host.iterdir()) == []
    finally:
        image_store.remove(info.digest)


def test_the_workspace_is_seeded_from_the_image_never_through_its_links(image_store: ImageStore,
                                                                        tmp_path: Path) -> None:
    """The image's WORKDIR files are copied into each fresh workspace. An image whose WORKDIR
    passes through a link to a host folder handed that host folder's files to the agent."""
    from assay.environments.runtime import root_of, seed_workspace

    secret = tmp_path / "host" / "app"
    secret.mkdir(parents=True)
    (secret / "secret.txt").write_text("host secret\n")
    (tmp_path / "task").mkdir()
    info = _build(image_store, tmp_path / "task", f"FROM debian:bookworm\nRUN mkdir -p /srv/real/app "
                                                  f"&& echo image > /srv/real/app/own.txt && ln -s {tmp_path / 'host'} "
                                                  "/srv/link\nWORKDIR /srv/link/app\n")
    try:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        seed_workspace(root_of(info, image_store), workspace)
        assert not (workspace / "secret.txt").exists()
        assert list(workspace.iterdir()) == []  # the folder is not in the image (its /tmp emptied at the seal)
    finally:
        image_store.remove(info.digest)
