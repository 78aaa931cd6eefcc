"""Forms of real task collections the importers refused although a faithful mapping exists.

- A Harbor task that names a prebuilt image (``[environment] docker_image``) and also ships the
  Dockerfile it was built from (every official Terminal-Bench 2 task does; so does a fetched
  collection, ``MenendezJuan/terminal-bench-2.1-tasks``). The image cannot be pulled here, but
  Harbor itself builds the Dockerfile instead when asked to (``force_build``, and its
  container backends that build whenever a Dockerfile exists): so does assay, and says so.
  A prebuilt image with no Dockerfile is still refused.
- Terminal-Bench 1's first task format: the prompt in ``descriptions`` (``key: base`` and other
  keys for rewordings, every key run against the same tests) and the stock test scripts named in
  ``test_scripts``. The base description is the prompt, each other key a prompt variant with the
  same verifier (assay's ``variants``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.importers import import_suite
from assay.spec.load import load_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def _harbor(tmp_path: Path, extra_env: str, dockerfile: bool = True) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "prebuilt")
    toml = src / "prebuilt/task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", "[environment]\n" + extra_env))
    if not dockerfile:
        (src / "prebuilt/environment/Dockerfile").unlink()
        shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")  # an import with nothing in it is refused whole
    return src


def test_a_prebuilt_image_with_its_dockerfile_is_built_from_the_dockerfile_and_said(tmp_path: Path) -> None:
    src = _harbor(tmp_path, 'docker_image = "alexgshaw/prebuilt:20251031"\n')
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert r.imported, r.refused
    said = [a for a in r.approximated if "alexgshaw/prebuilt:20251031" in a]
    assert said and "environment/Dockerfile" in said[0] and "force_build" in said[0]
    t = {x.id: x for x in load_suite(tmp_path / "out").tasks}["prebuilt"]
    assert t.spec.environment is not None and t.spec.environment.dockerfile == "environment/Dockerfile"
    assert any("alexgshaw/prebuilt:20251031" in d for d in t.spec.deviations)  # in every run's manifest
    assert not any("docker_image" in u for u in r.unmapped)


def test_a_prebuilt_image_without_a_dockerfile_is_still_refused(tmp_path: Path) -> None:
    src = _harbor(tmp_path, 'docker_image = "alexgshaw/prebuilt:20251031"\n', dockerfile=False)
    r = {t.id: t for t in import_suite("harbor", src, tmp_path / "out").tasks}["prebuilt"]
    assert not r.imported and "alexgshaw/prebuilt:20251031" in r.refused[0]
    assert "cannot be fetched here" in r.refused[0]


TB1_STOCK = {"test_scripts": ["setup-uv-pytest.sh", "run-uv-pytest.sh"]}


def _tb1(tmp_path: Path, **fields: object) -> Path:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench/evoeval-0", src / "early")
    path = src / "early/task.yaml"
    doc = yaml.safe_load(path.read_text())
    doc.pop("instruction")
    doc.update(fields)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return src


def test_descriptions_base_is_the_prompt_and_other_keys_are_variants(tmp_path: Path) -> None:
    src = _tb1(tmp_path, descriptions=[{"key": "base", "description": "Write solution.py.\n"},
                                       {"key": "hard", "description": "Write it.\n"}], **TB1_STOCK)
    (src / "early/run-tests.sh").unlink(missing_ok=True)  # the early form has none: the stock scripts run
    [r] = import_suite("terminal-bench", src, tmp_path / "out").tasks
    assert r.imported, r.refused
    t = load_suite(tmp_path / "out").tasks[0]
    assert t.prompt.strip() == "Write solution.py."
    [v] = t.spec.variants
    assert v.id == "hard" and v.prompt is not None and v.prompt.strip() == "Write it."
    assert [p.kind for p in t.spec.predicates] == ["pytest"]  # one verifier for every description
    assert any("descriptions" in m and "hard" in m for m in r.mapped)
    assert any("test_scripts" in m for m in r.mapped)


def test_descriptions_without_base_take_the_first_and_say_so(tmp_path: Path) -> None:
    src = _tb1(tmp_path, descriptions=[{"key": "short", "description": "Do it.\n"}])
    [r] = import_suite("terminal-bench", src, tmp_path / "out").tasks
    assert r.imported, r.refused
    assert load_suite(tmp_path / "out").tasks[0].prompt.strip() == "Do it."
    assert any("no 'base'" in a and "short" in a for a in r.approximated)


@pytest.mark.parametrize(("fields", "words"), [
    ({"descriptions": []}, "no instruction"),
    ({"descriptions": [{"key": "base"}]}, "descriptions[0]"),
    ({"descriptions": [{"key": "base", "description": "   "}]}, "descriptions[0]"),
    ({"descriptions": "Write it"}, "descriptions"),
    ({"descriptions": [{"key": "base", "description": "a"}, {"key": "base", "description": "b"}]}, "twice"),
    ({"descriptions": [{"key": "base", "description": "a"}], "test_scripts": ["setup-uv-pytest.sh", "my-runner.sh"]},
     "my-runner.sh"),
])
def test_bad_descriptions_or_unknown_test_scripts_leave_the_task_out(tmp_path: Path, fields: dict, words: str) -> None:
    src = _tb1(tmp_path, **fields)
    shutil.copytree(FIXTURES / "terminal-bench/evoeval-1", src / "good")  # an import with nothing in it is refused whole
    r = {t.id: t for t in import_suite("terminal-bench", src, tmp_path / "out").tasks}["early"]
    assert not r.imported and words in r.refused[0], r.refused
