"""A Harbor task's resource fields as given: a zero (Docker's "no limit") is said in the task's
report, not silently replaced by assay's default; a value assay refuses is refused naming the
source field, and a refusal by assay's loader names the task's source, not the importer's
staging folder (removed by the time anyone reads the reason)."""

from __future__ import annotations

import shutil
from pathlib import Path

from assay.importers import import_suite
from assay.spec.load import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _harbor_with(tmp_path: Path, env_lines: dict[str, str]) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "t")
    toml = src / "t/task.toml"
    text = toml.read_text()
    for key, value in env_lines.items():
        old = next(line for line in text.splitlines() if line.startswith(f"{key} ="))
        text = text.replace(old, f"{key} = {value}")
    toml.write_text(text)
    shutil.copytree(FIXTURES / "harbor/multi-reward", src / "other")
    return src


def test_a_zero_limit_is_reported_not_silently_defaulted(tmp_path: Path) -> None:
    src = _harbor_with(tmp_path, {"memory_mb": "0", "cpus": "0"})
    rep = import_suite("harbor", src, tmp_path / "out")
    t = {x.id: x for x in rep.tasks}["t"]
    assert t.imported
    said = " ".join(t.approximated)
    assert "environment.memory_mb = 0" in said and "environment.cpus = 0" in said
    spec = {x.id: x for x in load_suite(tmp_path / "out").tasks}["t"].spec
    # assay's defaults apply, and the report says which
    assert spec.limits is None or spec.limits.memory_mb != 0


def test_a_negative_limit_is_refused_naming_the_source_field(tmp_path: Path) -> None:
    src = _harbor_with(tmp_path, {"memory_mb": "-5"})
    rep = import_suite("harbor", src, tmp_path / "out")
    t = {x.id: x for x in rep.tasks}["t"]
    assert not t.imported
    why = " ".join(t.refused)
    assert "environment.memory_mb" in why and "-5" in why
    assert {x.id for x in rep.tasks if x.imported} == {"other"}


def test_a_loader_refusal_names_the_source_not_the_staging_folder(tmp_path: Path) -> None:
    src = _harbor_with(tmp_path, {"memory_mb": str(10**13)})  # beyond any host: assay's loader refuses it
    rep = import_suite("harbor", src, tmp_path / "out")
    t = {x.id: x for x in rep.tasks}["t"]
    assert not t.imported
    why = " ".join(t.refused)
    assert "limits.memory_mb" in why
    assert ".import-" not in why and str(tmp_path / "out") not in why  # the staging folder is gone
    assert str(src / "t") in why or "task.yaml written for" in why
    report_md = (tmp_path / "out" / "import-report.md").read_text()
    assert ".import-" not in report_md
