"""Two builds of one image give the same image: the same rootfs digest and the same OCI image
digest. Cheap: the base is the session's shared one (built once); the image over it, with an apt
package, a pip package pinned by version, Python byte code and files made at build time, is
built, taken out of the store, and built again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.environments.build import build
from assay.environments.oci import export
from assay.environments.plan import plan_for
from assay.environments.reproducible import SOURCE_DATE_EPOCH
from assay.environments.store import ImageStore
from tests.environments.conftest import shared_env

STEPS = [
    "echo $SOURCE_DATE_EPOCH > /opt/built-at.txt",  # what a build says of its time: the fixed epoch
    "mkdir -p /opt/app && echo 'print(1)' > /opt/app/m.py && python3 -m compileall -q /opt/app",
    "useradd -m builder",
]


@pytest.mark.timeout(1500)  # a cold store builds the shared base first
def test_two_builds_of_one_image_are_the_same_image(image_store: ImageStore, tmp_path: Path) -> None:
    env = shared_env(pip=["six==1.16.0"], steps=STEPS)
    plan = plan_for("repro", tmp_path, env, tmp_path / "task.yaml")
    first = build(image_store, plan)
    oci_first = export(image_store, first, tmp_path / "oci-1")
    built_at = (image_store.rootfs(first.digest) / "opt" / "built-at.txt").read_text()
    shutil.rmtree(image_store.path(first.digest))  # the image only: the base stays shared
    assert image_store.get(plan.digest) is None
    second = build(image_store, plan)
    oci_second = export(image_store, second, tmp_path / "oci-2")
    assert second.rootfs_sha256 == first.rootfs_sha256
    assert oci_second == oci_first  # the exported image's digest: layer bytes, config, manifest
    assert built_at.strip() == str(SOURCE_DATE_EPOCH)  # it reached the steps
    root = image_store.rootfs(second.digest)
    assert not list((root / "var" / "lib" / "apt" / "lists").glob("*_Packages*"))  # apt's lists went
    assert max(p.lstat().st_mtime for p in (root / "opt").rglob("*")) <= SOURCE_DATE_EPOCH
