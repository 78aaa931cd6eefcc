"""``assay k8s render`` with the suite's task images: every pod (the head, whose run checks the
images first, and every sandbox worker) pulls each image by its digest in an init container
that puts it into the pod's image store at assay's digest, with its image.json; validated
offline against Kubernetes' own schemas (the pod templates as PodTemplates, strict) and
KubeRay's CRD; an unpinned reference is refused before anything is rendered."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from assay.deploy.k8s import RenderOptions, render
from assay.deploy.k8s_images import STORE, TaskImage
from assay.errors import UsageError
from tests.deploy.test_k8s_render import K8S_VERSION, validate_all

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
IMAGES = (
    TaskImage("apt-jq", "registry.local/envs/apt-jq@sha256:" + "1" * 64, A, json.dumps({"digest": A})),
    TaskImage("pip-pandas", "registry.local/envs/pip-pandas@sha256:" + "1" * 64, A, json.dumps({"digest": A})),
    TaskImage("app", "registry.local/envs/app@sha256:" + "2" * 64, B, json.dumps({"digest": B})),
)


def _templates(objs: list[dict]) -> dict[str, dict]:
    job = next(o for o in objs if o["kind"] == "RayJob")["spec"]["rayClusterSpec"]
    return {"head": job["headGroupSpec"]["template"],
            **{g["groupName"]: g["template"] for g in job["workerGroupSpecs"]}}


def test_every_pod_fetches_each_image_once_by_digest_into_its_store() -> None:
    objs = render(RenderOptions(suite="/suites/environments", agents=("oracle",), task_images=IMAGES))
    validate_all(objs)
    cm = next(o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "assay-task-images")
    assert cm["data"]["app"] == IMAGES[2].reference and json.loads(cm["data"]["a" * 64 + ".json"]) == {"digest": A}
    templates = _templates(objs)
    assert set(templates) == {"head", "sandbox", "verifier"}  # the verifier runs over the image too
    for role, t in templates.items():
        kubernetes_validate.validate({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role},
                                      "template": t}, K8S_VERSION, strict=True)
        inits = t["spec"]["initContainers"]
        assert [c["image"] for c in inits] == [IMAGES[0].reference, IMAGES[2].reference]  # shared image: once
        for c, digest in zip(inits, (A, B)):
            script = c["command"][-1]
            assert f"{STORE}/sha256-{digest[7:]}.part/rootfs" in script and script.endswith(f"{STORE}/sha256-{digest[7:]}")
            assert c["securityContext"]["capabilities"]["drop"] == ["ALL"]
        main = t["spec"]["containers"][0]
        assert {"name": "ASSAY_IMAGE_STORE", "value": STORE} in main["env"]
        assert {"name": "images", "mountPath": STORE} in main["volumeMounts"]


def test_without_task_images_nothing_changes() -> None:
    plain = render(RenderOptions(suite="/suites/starter", agents=("oracle",)))
    assert all("initContainers" not in t["spec"] for t in _templates(plain).values())


@pytest.mark.parametrize("bad", [
    TaskImage("t", "registry.local/envs/t:latest", A, "{}"),  # a tag, not a digest
    TaskImage("t", "registry.local/envs/t@sha256:short", A, "{}"),
    TaskImage("t", "registry.local/envs/t@sha256:" + "1" * 64, "sha256:nothex", "{}"),
])
def test_an_unpinned_reference_is_refused(bad: TaskImage) -> None:
    with pytest.raises(UsageError, match="task t"):
        render(RenderOptions(suite="/s", agents=("oracle",), task_images=(bad,)))
