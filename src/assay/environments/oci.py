"""An image of the store written as an OCI image layout (one uncompressed layer), with tarfile
and json alone: what Kubernetes and other runtimes pull, named by its manifest's digest."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import tarfile
from pathlib import Path
from typing import BinaryIO

from assay.environments.store import ImageInfo, ImageStore

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


class _Hashing:
    """A write-only file that hashes and counts what passes through it."""

    def __init__(self, f: BinaryIO):
        self.f, self.h, self.n = f, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.h.update(data)
        self.n += len(data)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


def _blob(blobs: Path, data: bytes) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    (blobs / digest).write_bytes(data)
    return {"digest": f"sha256:{digest}", "size": len(data)}


def export(store: ImageStore, info: ImageInfo, dest: Path) -> str:
    """Write ``info``'s image into the new folder ``dest``; returns the manifest's digest."""
    dest.mkdir(parents=True)
    blobs = dest / "blobs" / "sha256"
    blobs.mkdir(parents=True)
    tmp = blobs / ".layer.tmp"
    with open(tmp, "wb") as raw:
        out = _Hashing(raw)
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            root = store.rootfs(info.digest)
            for name in sorted(os.listdir(root)):
                tar.add(root / name, arcname=name, recursive=True)
    layer = out.h.hexdigest()
    os.rename(tmp, blobs / layer)
    env = [f"{k}={v}" for k, v in info.env.items()]
    if not any(e.startswith("PATH=") for e in env):
        env.insert(0, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    config = {"architecture": ARCH.get(platform.machine(), platform.machine()), "os": "linux",
              "config": {"Env": env, **({"WorkingDir": info.workdir} if info.workdir else {}),
                         **({"User": info.user} if info.user else {})},
              "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer}"]},
              "history": [{"created_by": f"assay image {info.digest}", "comment": "; ".join(info.deviations)}]}
    cfg = _blob(blobs, json.dumps(config, sort_keys=True).encode())
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": {"mediaType": CONFIG, **cfg},
                "layers": [{"mediaType": LAYER, "digest": f"sha256:{layer}", "size": out.n}],
                "annotations": {"dev.assay.image": info.digest}}
    man = _blob(blobs, json.dumps(manifest, sort_keys=True).encode())
    index = {"schemaVersion": 2, "manifests": [{"mediaType": MANIFEST, **man,
                                                "annotations": {"org.opencontainers.image.ref.name": info.name}}]}
    (dest / "index.json").write_text(json.dumps(index, sort_keys=True))
    (dest / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    return str(man["digest"])
