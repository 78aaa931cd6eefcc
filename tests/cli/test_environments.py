"""``assay env list|show|prune`` and ``assay doctor``'s image store, through the real CLI over a
store of small hand-made images (no root, no mmdebstrap): what each command prints, ``show
--check`` catching an image changed after its build (exit 3), ``prune --keep SUITE`` keeping
exactly the images (and the base) that suite's plans name."""

from __future__ import annotations

import json
from pathlib import Path

from assay.environments.runtime import plan_of
from assay.environments.store import ROOTFS, ImageInfo, ImageStore, rootfs_digest
from assay.spec.load import load_suite
from tests.conftest import ROOT, run_assay

EXAMPLES = ROOT / "examples" / "environments"


def _image(store: ImageStore, digest: str, name: str, kind: str = "image") -> ImageInfo:
    work = store.scratch()
    (work / ROOTFS / "etc").mkdir(parents=True)
    (work / ROOTFS / "etc" / "os-release").write_text(f"ID=debian\nNAME={name}\n")
    sha, size = rootfs_digest(work / ROOTFS)
    return store.commit(work, ImageInfo(digest=digest, name=name, kind=kind, rootfs_sha256=sha, size_bytes=size,
                                        deviations=["FROM x mapped"] if kind == "image" else []))


def _env(store: ImageStore, *args: str) -> tuple[int, str]:
    r = run_assay("env", *args, "--store", str(store.root))
    return r.returncode, r.stdout + r.stderr


def test_list_show_and_check(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    a = _image(store, "sha256:" + "a1" * 32, "alpha")
    _image(store, "sha256:" + "a2" * 32, "beta", kind="base")
    code, text = _env(store, "list")
    assert code == 0 and "alpha" in text and "beta" in text and "base" in text and str(store.root) in text, text
    code, text = _env(store, "show", "a1a1", "--check")
    assert code == 0 and json.loads(text[:text.rindex("}") + 1])["name"] == "alpha", text
    assert "matches its recorded digest" in text
    code, text = _env(store, "show", "a")  # a prefix of both: names how many, and the fix
    assert code == 2 and "names 2 images" in text and "assay env list" in text, text
    (store.rootfs(a.digest) / "etc" / "os-release").write_text("ID=tampered\n")
    code, text = _env(store, "show", f"alpha@{a.digest}", "--check")
    assert code == 3 and "CHANGED" in text and "modified after it was built" in text, text


def test_prune_keeps_what_a_suite_names_and_sweeps_dead_builds(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    plans = [p for p in (plan_of(t) for t in load_suite(EXAMPLES).tasks) if p is not None]
    wanted = {p.digest for p in plans} | {p.base.digest for p in plans}
    for i, digest in enumerate(sorted(wanted)):
        _image(store, digest, f"kept{i}")
    stale = _image(store, "sha256:" + "5e" * 32, "stale")
    store.scratch()  # a build that died: its folder left, no lock held
    code, text = _env(store, "prune")
    assert code == 2 and "--keep SUITE" in text and "--all" in text, text
    code, text = _env(store, "prune", "--keep", str(EXAMPLES))
    assert code == 0 and f"removed {stale.ref}" in text and "1 image(s) removed, 1 unfinished build(s) swept" in text, text
    assert {i.digest for i in store.images()} == wanted
    code, text = _env(store, "prune", "--all")
    assert code == 0 and f"{len(wanted)} image(s) removed" in text and store.images() == [], text


def test_doctor_reports_the_image_store(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    _image(store, "sha256:" + "b1" * 32, "one")
    _image(store, "sha256:" + "b2" * 32, "two", kind="base")
    r = run_assay("doctor", "--json", env={"ASSAY_IMAGE_STORE": str(store.root)})
    facts = json.loads(r.stdout)["image_store"]
    assert facts["root"] == str(store.root) and facts["images"] == 2 and facts["bases"] == 1, r.stdout
    text = run_assay("doctor", env={"ASSAY_IMAGE_STORE": str(store.root)}).stdout
    assert f"image store: {store.root} (2 image(s)" in text and "mmdebstrap:" in text, text
