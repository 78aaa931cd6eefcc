"""The task images of a campaign on Kubernetes: how the head and every worker pod (sandbox and verifier) get the
suite's images (``assay env export --oci``, pushed by the user) into their own image store.

The kubelet pulls each image by its digest (pinned: a tag is never trusted), as an init
container of the pod; that container copies its own root filesystem (``cp -a -x /``: one file
system, so the pod's mounts stay out) into the pod's ``images`` volume at the store's layout
(``sha256-<assay digest>/rootfs``, the image's ``image.json`` from a ConfigMap beside it), by one
rename when whole. The harness then finds every image in ``$ASSAY_IMAGE_STORE`` with one digest
check, as on a machine that built them, and never builds on a worker. The copy keeps owners and
modes, so the init container runs as root with only the capabilities a copy needs; the pod's own
``/etc/hosts``, ``/etc/hostname`` and ``/etc/resolv.conf`` (kubelet's mounts) are what the copy
holds at those paths.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any

from assay.errors import UsageError

STORE = "/images"
CONFIGMAP = "assay-task-images"
VOLUME = "images"
INFO_VOLUME = "image-info"
_PINNED = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class TaskImage:
    """One task's image: its OCI reference (pinned by manifest digest), assay's digest of it
    (the store's name), and its ``image.json``."""

    task: str
    reference: str
    digest: str
    info_json: str

    def check(self) -> str | None:
        if not _PINNED.fullmatch(self.reference):
            return f"task {self.task}: image {self.reference!r} is not pinned by digest (name@sha256:<64 hex>)"
        if not _DIGEST.fullmatch(self.digest):
            return f"task {self.task}: assay image digest {self.digest!r} is not sha256:<64 hex>"
        return None


def check(images: tuple[TaskImage, ...]) -> None:
    problems = [p for p in (i.check() for i in images) if p]
    if problems:
        raise UsageError("; ".join(problems) + " (fix: pass --task-image-registry after `assay env export --oci`)")


def _hex(digest: str) -> str:
    return digest.removeprefix("sha256:")


def distinct(images: tuple[TaskImage, ...]) -> list[TaskImage]:
    """One per assay digest (tasks sharing an image pull it once), in a stable order."""
    first: dict[str, TaskImage] = {}
    for i in sorted(images, key=lambda i: i.digest):
        first.setdefault(i.digest, i)
    return list(first.values())


def configmap(images: tuple[TaskImage, ...], meta: dict[str, Any]) -> dict[str, Any]:
    """Each task's reference, and each image's ``image.json`` (keys ``<hex>.json``)."""
    data = {i.task: i.reference for i in images}
    data.update({f"{_hex(i.digest)}.json": i.info_json for i in distinct(images)})
    return {"apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
            "metadata": {**meta, "annotations": {
                "assay/note": "each task's image by digest, fetched into every pod's image store by an init container"}},
            "data": data}


def init_containers(images: tuple[TaskImage, ...]) -> list[dict[str, Any]]:
    out = []
    for i in distinct(images):
        h = _hex(i.digest)
        dest = f"{STORE}/sha256-{h}"
        script = (f"set -eu; rm -rf {dest}.part; mkdir -p {dest}.part/rootfs; cp -a -x / {dest}.part/rootfs/; "
                  f"cp /image-info/{h}.json {dest}.part/image.json; mv {dest}.part {dest}")
        out.append({
            "name": f"image-{h[:12]}", "image": i.reference, "imagePullPolicy": "IfNotPresent",
            "command": ["/bin/sh", "-c", script],
            "securityContext": {"runAsUser": 0, "runAsNonRoot": False, "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                                "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"]}},
            "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}},
            "volumeMounts": [{"name": VOLUME, "mountPath": STORE},
                             {"name": INFO_VOLUME, "mountPath": "/image-info", "readOnly": True}],
        })
    return out


def with_images(template: dict[str, Any], images: tuple[TaskImage, ...], size: str = "50Gi") -> dict[str, Any]:
    """A pod template whose first container finds every task image in its image store."""
    if not images:
        return template
    spec = dict(template["spec"])
    containers = [dict(c) for c in spec["containers"]]
    main = containers[0]
    main["env"] = [*main.get("env", []), {"name": "ASSAY_IMAGE_STORE", "value": STORE}]
    main["volumeMounts"] = [*main.get("volumeMounts", []), {"name": VOLUME, "mountPath": STORE}]
    spec["containers"] = containers
    spec["initContainers"] = [*spec.get("initContainers", []), *init_containers(images)]
    spec["volumes"] = [*spec.get("volumes", []), {"name": VOLUME, "emptyDir": {"sizeLimit": size}},
                       {"name": INFO_VOLUME, "configMap": {"name": CONFIGMAP}}]
    return {**template, "spec": spec}


def describe(images: tuple[TaskImage, ...]) -> str:
    """One line per image, for an annotation."""
    return "; ".join(f"{shlex.quote(i.reference)} as {i.digest}" for i in distinct(images))


__all__ = ["CONFIGMAP", "STORE", "TaskImage", "check", "configmap", "describe", "distinct", "init_containers",
           "with_images"]
