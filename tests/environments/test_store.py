"""The image store: an image is named only once whole, a store image changed after its build is
caught, leftovers of a build that died are swept while a live build's are not."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from assay.environments.check import check_image, verify_manifest_images
from assay.environments.store import ROOTFS, ImageInfo, ImageStore, rootfs_digest


def _image(store: ImageStore, name: str = "x") -> ImageInfo:
    work = store.scratch()
    (work / ROOTFS / "etc").mkdir(parents=True)
    (work / ROOTFS / "etc" / "os-release").write_text("ID=debian\n")
    (work / ROOTFS / "bin").symlink_to("usr/bin")
    sha, size = rootfs_digest(work / ROOTFS)
    return store.commit(work, ImageInfo(digest=f"sha256:{name * 64}"[:71], name=name, kind="image",
                                        rootfs_sha256=sha, size_bytes=size))


def test_only_a_committed_build_has_a_name(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    work = store.scratch()
    (work / ROOTFS).mkdir()
    assert store.images() == []
    store.discard(work)
    info = _image(store)
    assert store.get(info.digest) == info and [i.digest for i in store.images()] == [info.digest]
    assert store.get("sha256:" + "f" * 64) is None


def test_an_image_changed_after_its_build_is_caught(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    info = _image(store, "a")
    assert check_image(store, info.digest, info.rootfs_sha256) is None
    (store.rootfs(info.digest) / "etc" / "os-release").write_text("ID=tampered\n")
    problem = check_image(store, info.digest, info.rootfs_sha256)
    assert problem is not None and "modified after it was built" in problem
    problems, notes = verify_manifest_images({"t": (f"t@{info.digest}", info.rootfs_sha256),
                                              "u": ("u@sha256:" + "e" * 64, "sha256:0")}, store)
    assert len(problems) == 1 and "'t'" in problems[0]
    assert len(notes) == 1 and "not in the local store" in notes[0]


def test_a_dead_builds_leftovers_are_swept_a_live_ones_kept(tmp_path: Path) -> None:
    store = ImageStore(tmp_path)
    dead = store.scratch()
    live = store.scratch()
    fd = os.open(live, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert store.sweep() == 1
        assert not dead.exists() and live.exists()
    finally:
        os.close(fd)
    info = _image(store, "b")
    assert store.remove(info.digest) and store.get(info.digest) is None
