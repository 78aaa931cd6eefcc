"""YAML whose aliases expand past any real document (a "billion laughs": nine lists of nine
references to the one before, 387 million strings from 1 KB) or refer to themselves.

PyYAML shares an aliased node, so parsing is quick; everything after it (validation, digests,
JSON) walks the expansion: `assay validate` of such a task.yaml ran for minutes, and `assay
import terminal-bench` of a collection with one such task.yaml (third-party files) never ended.
Now each is refused as that file's problem, naming it, and the rest of an import goes on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from assay.importers import import_suite
from assay.untrusted.yaml_doc import YamlTooLarge, load_yaml
from tests.conftest import run_assay

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_an_expansion_past_the_bound_is_refused() -> None:
    with pytest.raises(YamlTooLarge, match="alias"):
        load_yaml(laughs())


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(YamlTooLarge, match="itself"):
        load_yaml("a: &a [1, *a]\n")


def test_ordinary_anchors_still_load_as_pyyaml_loads_them() -> None:
    text = "base: &b {cpus: 1, memory_mb: 512}\nx: *b\ny: {<<: *b, cpus: 2}\nz: [*b, *b]\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("") is None and load_yaml("- 1\n- [2, 3]\n") == [1, [2, 3]]
    assert isinstance(YamlTooLarge("x"), yaml.YAMLError)  # every handler of bad YAML takes it


def test_validate_refuses_such_a_task_naming_the_file(tmp_path: Path) -> None:
    suite = tmp_path / "s"
    (suite / "tasks" / "t").mkdir(parents=True)
    (suite / "suite.yaml").write_text('name: s\nversion: "1"\ncategories: [{id: code, weight: 1}]\n')
    (suite / "tasks" / "t" / "task.yaml").write_text(
        laughs() + "category: code\nprompt: hi\npredicates: [{id: f, kind: file_exists, path: x}]\ndescription: *a8\n")
    proc = run_assay("validate", str(suite), "--sandbox", "host")  # bounded: it ran for good before
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert "task.yaml" in said and "alias" in said


def test_an_import_leaves_such_a_task_out_and_goes_on(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "terminal-bench", src)
    first = sorted(p.parent for p in src.rglob("task.yaml"))[0]
    text = (first / "task.yaml").read_text()
    (first / "task.yaml").write_text(laughs() + text + "\ntags: *a8\n")
    rep = import_suite("terminal-bench", src, tmp_path / "out")
    bad = {t.id: t for t in rep.tasks}
    refused = [t for t in rep.tasks if not t.imported]
    assert any("alias" in " ".join(t.refused) for t in refused), bad
    assert any(t.imported for t in rep.tasks)


def test_nesting_past_the_recursion_limit_is_bad_yaml_not_a_crash() -> None:
    with pytest.raises(YamlTooLarge, match="nested too deep"):
        load_yaml("[" * 20000 + "]" * 20000)


def test_an_import_leaves_out_a_task_toml_nested_too_deep(tmp_path: Path) -> None:
    """TOML has no aliases, but Python's parser recurses per level: the whole import crashed."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "deep")
    shutil.copytree(FIXTURES / "harbor/multi-reward", src / "fine")
    toml = src / "deep/task.toml"
    toml.write_text(toml.read_text().replace("[verifier]", "x = " + "[" * 5000 + "]" * 5000 + "\n\n[verifier]"))
    rep = import_suite("harbor", src, tmp_path / "out")
    tasks = {t.id: t for t in rep.tasks}
    assert not tasks["deep"].imported and "nested too deep" in " ".join(tasks["deep"].refused)
    assert tasks["fine"].imported
