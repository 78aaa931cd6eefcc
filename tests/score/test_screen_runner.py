"""The screen's `runner_shadowed` rule names modules a test runner imports, as any import form,
and nothing else (a task asking for `parser.py` or `pytest_helpers.py` is not flagged)."""

from __future__ import annotations

import pytest

from assay.score.screen import module_name, screen_diff
from assay.store.workspace_diff import WorkspaceDiff


@pytest.mark.parametrize(("path", "module"), [
    ("pytest.py", "pytest"), ("src/pytest.py", "pytest"), ("_pytest/__init__.py", "_pytest"),
    ("pluggy.pyc", "pluggy"), ("py.cpython-311-x86_64-linux-gnu.so", "py"), ("README", None),
    ("notes.txt", None), ("__init__.py", None), ("pytest", None)])
def test_module_names(path: str, module: str | None) -> None:
    assert module_name(path) == module


def _rules(entries: list[dict]) -> set[tuple[str, str]]:
    return {(f.rule, f.path) for f in screen_diff(WorkspaceDiff(entries=entries, truncated=False, omitted_entries=0, limits={}))}


def test_only_added_runner_modules_are_flagged() -> None:
    added = [{"path": p, "status": "added"} for p in
             ("pytest.py", "_pytest/__init__.py", "parser.py", "pytest_helpers.py", "lib/unittest.py")]
    flagged = {p for rule, p in _rules(added) if rule == "runner_shadowed"}
    assert flagged == {"pytest.py", "_pytest/__init__.py", "lib/unittest.py"}
    assert not any(r == "runner_shadowed" for r, _ in _rules([{"path": "pytest.py", "status": "changed"}]))
