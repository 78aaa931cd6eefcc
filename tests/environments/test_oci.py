"""``assay env export --oci``: a real OCI image layout (every blob named by its content's
digest, the image's ENV and WORKDIR in its config), and ``assay k8s render`` naming each task's
image by that digest."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from assay.environments.oci import export, task_references
from assay.environments.store import ImageInfo, ImageStore
from tests.conftest import cli_timeout
from tests.environments.conftest import EXAMPLES


def _sha(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def test_an_image_exports_as_an_oci_layout_and_k8s_names_it_by_digest(
        example_images: tuple[object, dict[str, ImageInfo]], image_store: ImageStore, tmp_path: Path) -> None:
    info = example_images[1]["app-workdir"]
    out = tmp_path / "oci"
    digest = export(image_store, info, out)
    assert json.loads((out / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    [entry] = json.loads((out / "index.json").read_text())["manifests"]
    blobs = out / "blobs" / "sha256"
    assert entry["digest"] == digest
    for blob in blobs.iterdir():  # every blob is named by its content
        assert _sha(blob) == "sha256:" + blob.name
    manifest = json.loads((blobs / digest.removeprefix("sha256:")).read_text())
    config = json.loads((blobs / manifest["config"]["digest"].removeprefix("sha256:")).read_text())
    assert config["config"]["WorkingDir"] == "/app" and "APP_HOME=/app" in config["config"]["Env"]
    assert config["rootfs"]["diff_ids"] == [manifest["layers"][0]["digest"]]
    with tarfile.open(blobs / manifest["layers"][0]["digest"].removeprefix("sha256:")) as tar:
        names = set(tar.getnames())
    assert {"etc/debian_version", "opt/app/greet.txt", "usr/bin/python3"} <= names

    with pytest.raises(ValueError, match="not exported as OCI images yet"):
        task_references(EXAMPLES, "registry.example/assay", ImageStore(tmp_path / "empty-store"))
    export(image_store, example_images[1]["pip-pandas"], tmp_path / "oci2")  # the suite's other image
    refs = dict(task_references(EXAMPLES, "registry.example/assay", image_store))
    assert refs["app-workdir"] == f"registry.example/assay/app-workdir@{digest}"
    res = subprocess.run([sys.executable, "-m", "assay.cli.main", "k8s", "render", "--suite", str(EXAMPLES),
                          "--agent", "oracle", "--task-image-registry", "registry.example/assay"],
                         capture_output=True, text=True, timeout=cli_timeout())
    assert res.returncode == 0, res.stderr
    docs = list(yaml.safe_load_all(res.stdout))
    [cm] = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "assay-task-images"]
    assert cm["data"]["app-workdir"] == f"registry.example/assay/app-workdir@{digest}"
