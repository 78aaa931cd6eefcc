"""Harbor dataset.toml digests: each pinned task's content digest is verified on import (a
mismatch is refused with the reason, the rest goes on), and the verified digest is recorded in
the suite (task.yaml) and in every run's manifest. The expected digests were computed by
Harbor's own packager (harbor 0.26.0, ``harbor.publisher.packager.Packager.compute_content_hash``)
over the shipped fixtures, so the importer reads the digest the way its owner does."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from assay.cli.main import main
from assay.importers import import_suite
from assay.importers.harbor_digest import content_digest
from tests.conftest import write_suite, write_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import" / "harbor"
#: by harbor 0.26.0's Packager.compute_content_hash, run over tests/fixtures/import/harbor/<name>
HARBOR = {"simple-task": "e6231bc3bddcc67d887d0bfd5e05b82acd09d1e6f6bf40fb9d2c85d031d9a589",
          "multi-reward": "7def8e1cc12fbe26d59b19dbe7e729f1e4874da484919f98a01dec0bebfcf5f5",
          "multi-container": "00c15e77e429e2001cb4248141b58a9a21911ee93c7c56c5738ca9a2ef9b25be"}


def test_the_digest_is_harbors_own() -> None:
    for name, digest in HARBOR.items():
        assert content_digest(FIXTURES / name) == f"sha256:{digest}", name


def _dataset(tmp_path: Path, pins: dict[str, str]) -> Path:
    src = tmp_path / "ds"
    for name in ("simple-task", "multi-reward"):
        shutil.copytree(FIXTURES / name, src / name)
    body = "".join(f'[[tasks]]\nname = "cookbook/{n}"\ndigest = "sha256:{d}"\n\n' for n, d in pins.items())
    (src / "dataset.toml").write_text(f'[dataset]\nname = "cookbook/recipes"\n\n{body}')
    return src


def test_a_verified_digest_is_recorded_and_a_mismatch_refused(tmp_path: Path) -> None:
    src = _dataset(tmp_path, {"simple-task": HARBOR["simple-task"], "multi-reward": "0" * 64})
    rep = import_suite("harbor", src, tmp_path / "s")
    why = {t.id: " ".join(t.refused) for t in rep.tasks}
    assert why["simple-task"] == ""
    assert "differs from dataset.toml's sha256:00000000000" in why["multi-reward"]
    assert "the task changed since the dataset pinned it" in why["multi-reward"]
    doc = yaml.safe_load((tmp_path / "s/tasks/simple-task/task.yaml").read_text())
    assert doc["extra"]["source"]["digest"] == f"sha256:{HARBOR['simple-task']}"
    assert any("digest sha256:e6231bc3bdd" in m and "verified" in m
               for m in {t.id: t for t in rep.tasks}["simple-task"].mapped)


def test_an_edited_task_no_longer_matches(tmp_path: Path) -> None:
    src = _dataset(tmp_path, {"simple-task": HARBOR["simple-task"]})
    with open(src / "simple-task" / "tests" / "test.sh", "a") as f:
        f.write("# edited\n")
    assert main(["import", "harbor", str(src), "-o", str(tmp_path / "s")]) == 1
    rep = json.loads((tmp_path / "s" / "import-report.json").read_text())
    assert any("differs from dataset.toml" in r for t in rep["tasks"] for r in t["refused"])


def test_a_malformed_dataset_toml_refuses_with_the_reason(tmp_path: Path) -> None:
    src = _dataset(tmp_path, {})
    (src / "dataset.toml").write_text('[[tasks]]\nname = "cookbook/simple-task"\ndigest = "md5:abc"\n')
    assert main(["import", "harbor", str(src), "-o", str(tmp_path / "s")]) == 2  # nothing could be imported
    assert not (tmp_path / "s").exists()


def test_the_digest_reaches_the_runs_manifest(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    digest = f"sha256:{HARBOR['simple-task']}"
    write_task(s, "t", task={"category": "code", "extra": {"source": {"format": "harbor", "digest": digest}},
                             "predicates": [{"id": "f", "kind": "file_exists", "path": "o"}]}, solution="touch o\n")
    assert main(["run", str(s), "-a", "oracle", "--sandbox", "host", "-q", "-o", str(tmp_path / "r")]) == 0
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["tasks"][0]["source_digest"] == digest
