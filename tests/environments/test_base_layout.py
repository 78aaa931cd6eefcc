"""The Debian base is laid out as Debian's own images are: its apt sources at
``/etc/apt/sources.list.d/debian.sources`` (deb822), the file Dockerfiles edit to add components or
pin a snapshot (a fetched Terminal-Bench 2.1 task's `FROM golang:1.27-bookworm` image does `sed -i
... /etc/apt/sources.list.d/debian.sources`). mmdebstrap wrote it as ``0000debian.sources``, so
such a step failed with "No such file or directory": a packaging difference scored as a build
failure of the task."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from assay.environments.build import build
from assay.environments.debian import sources_file
from assay.environments.plan import plan_for
from assay.environments.store import ImageStore
from assay.spec.environment import EnvironmentSpec
from tests.environments.conftest import shared_env


@pytest.mark.skipif(sources_file() is None or sources_file().name != "debian.sources",
                    reason="the host's apt sources are not Debian's deb822 debian.sources (the base reuses them)")
def test_the_base_keeps_its_sources_where_debians_images_do(image_store: ImageStore, tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text(
        "FROM debian:bookworm\n"
        "RUN sed -i 's/^Components: main$/Components: main contrib/' /etc/apt/sources.list.d/debian.sources "
        "&& grep -q '^Components: main contrib$' /etc/apt/sources.list.d/debian.sources\n")
    plan = plan_for("layout", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    plan = dataclasses.replace(plan, base=plan_for("s", tmp_path, shared_env()).base)  # the shared base
    info = build(image_store, plan)
    try:
        listed = sorted(p.name for p in (image_store.rootfs(info.digest) / "etc/apt/sources.list.d").iterdir())
        assert listed == ["debian.sources"], listed
    finally:
        image_store.remove(info.digest)
