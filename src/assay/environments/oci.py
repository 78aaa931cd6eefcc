"""An image of the store written as an OCI image layout (one uncompressed layer), with tarfile
and json alone: what Kubernetes and other runtimes pull, named by its manifest's digest."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path
from typing import BinaryIO

from assay.environments.reproducible import SOURCE_DATE_EPOCH
from assay.environments.store import INFO, ImageInfo, ImageStore
from assay.spec.environment_dockerfile import host_arch

LAYER = "application/vnd.oci.image.layer.v1.tar"
CONFIG = "application/vnd.oci.image.config.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"


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


def _normalised(member: tarfile.TarInfo) -> tarfile.TarInfo:
    """A layer's entry as any host writes it: no host user names, no date past the build epoch."""
    member.uname = member.gname = ""
    member.mtime = min(int(member.mtime), SOURCE_DATE_EPOCH)
    member.pax_headers = {}
    return member


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
            for name in sorted(os.listdir(root)):  # tarfile sorts what it recurses into too
                tar.add(root / name, arcname=name, recursive=True, filter=_normalised)
    layer = out.h.hexdigest()
    os.rename(tmp, blobs / layer)
    env = [f"{k}={v}" for k, v in info.env.items()]
    if not any(e.startswith("PATH=") for e in env):
        env.insert(0, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
    config = {"architecture": host_arch(), "os": "linux",
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
    exported = store.root / ".oci"
    exported.mkdir(exist_ok=True)
    (exported / f"{info.digest.removeprefix('sha256:')}.json").write_text(json.dumps({"manifest": man["digest"]}))
    return str(man["digest"])


def exported_manifest(store: ImageStore, digest: str) -> str | None:
    """The OCI manifest digest an earlier :func:`export` of ``digest`` wrote, if any."""
    try:
        return str(json.loads((store.root / ".oci" / f"{digest.removeprefix('sha256:')}.json").read_text())["manifest"])
    except (OSError, ValueError, KeyError):
        return None


def task_references(suite: Path, registry: str, store: ImageStore | None = None) -> list[tuple[str, str]]:
    """``(task, registry/task@sha256:<OCI manifest>)`` for every task of ``suite`` with an
    environment; ValueError naming the images not exported yet."""
    return [(t, ref) for t, ref, _, _ in task_images(suite, registry, store)]


def task_images(suite: Path, registry: str, store: ImageStore | None = None) -> list[tuple[str, str, str, str]]:
    """``(task, OCI reference by digest, assay's digest, image.json)`` for every task of ``suite``
    with an environment (what a Kubernetes pod needs to put the image in its own store);
    ValueError naming the images not exported yet."""
    from assay.environments.runtime import plan_of
    from assay.spec.load import load_suite

    store = store or ImageStore()
    refs: list[tuple[str, str, str, str]] = []
    missing: list[str] = []
    for t in load_suite(suite).tasks:
        plan = plan_of(t)
        if plan is None:
            continue
        manifest = exported_manifest(store, plan.digest)
        info = store.path(plan.digest) / INFO
        if manifest is None or not info.is_file():
            missing.append(f"{t.id} ({plan.digest})")
        else:
            refs.append((t.id, f"{registry.rstrip('/')}/{t.id}@{manifest}", plan.digest, info.read_text()))
    if missing:
        raise ValueError("not exported as OCI images yet: " + ", ".join(missing)
                         + " (run `assay env build` and `assay env export DIGEST --oci DIR`, then push DIR)")
    return refs
