"""What ``assay doctor`` says of the image store and the builder."""

from __future__ import annotations

from assay.environments.debian import mmdebstrap
from assay.environments.store import ImageStore


def store_facts(store: ImageStore | None = None) -> dict[str, object]:
    """The store's root, its images and their size, and whether a base can be built here."""
    store = store or ImageStore()
    images = store.images()
    return {"root": str(store.root), "images": len(images), "size_mb": round(sum(i.size_bytes for i in images) / 1e6),
            "bases": sum(1 for i in images if i.kind == "base"), "mmdebstrap": mmdebstrap()}
