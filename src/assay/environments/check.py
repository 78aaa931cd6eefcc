"""Checking images against what a manifest recorded, and pruning the store."""

from __future__ import annotations

from pathlib import Path

from assay.environments.plan import ImagePlan
from assay.environments.store import ImageInfo, ImageStore, rootfs_digest


def check_image(store: ImageStore, digest: str, rootfs_sha256: str) -> str | None:
    """None if the store's image of ``digest`` still has the root filesystem recorded; else why not."""
    info = store.get(digest)
    if info is None:
        return f"image {digest} is not in the store {store.root}"
    now, _ = rootfs_digest(store.rootfs(digest))
    if now != rootfs_sha256:
        return f"image {digest}: its root filesystem is {now}, recorded {rootfs_sha256} (modified after it was built)"
    return None


def verify_manifest_images(envs: dict[str, tuple[str, str]], store: ImageStore | None = None) -> tuple[list[str], list[str]]:
    """For ``task -> (image ref, rootfs digest)`` of a manifest: the problems (an image in the
    store that changed) and the notes (an image not in this store: not checked here)."""
    store = store or ImageStore()
    problems: list[str] = []
    notes: list[str] = []
    seen: dict[str, str | None] = {}
    for task, (ref, sha) in sorted(envs.items()):
        digest = ref.split("@", 1)[-1]
        if store.get(digest) is None:
            notes.append(f"task {task!r}: image {ref} is not in the local store {store.root}; not checked")
            continue
        if digest not in seen:
            seen[digest] = check_image(store, digest, sha)
        if seen[digest]:
            problems.append(f"task {task!r}: {seen[digest]}")
    return problems, notes


def prune(store: ImageStore, keep_suites: list[Path]) -> tuple[list[ImageInfo], int]:
    """Remove every image the kept suites do not need (an image needs its base)."""
    from assay.environments.runtime import plan_of
    from assay.spec.load import load_suite

    keep: set[str] = set()
    for suite in keep_suites:
        for t in load_suite(suite).tasks:
            plan: ImagePlan | None = plan_of(t)
            if plan is not None:
                keep |= {plan.digest, plan.base.digest}
    removed = [i for i in store.images() if i.digest not in keep]
    for i in removed:
        store.remove(i.digest)
    return removed, store.sweep()
