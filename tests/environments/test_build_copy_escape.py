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
