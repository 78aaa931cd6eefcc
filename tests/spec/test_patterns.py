"""A task's patterns are refused when the task loads if they do not compile: found only at
verification, every attempt ended as the verifier's crash (an infra error, retried) instead of
the suite author being told which field to fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import SpecError
from assay.spec import load_task
from tests.conftest import write_suite, write_task

BAD = "a(b"
WORLDS = {"ledger": {"categories": ["dining"], "entries": []}}


@pytest.mark.parametrize(("field", "task"), [
    ("predicates.0.file_matches.regex", {"predicates": [{"id": "p", "kind": "file_matches", "path": "x", "regex": BAD}]}),
    ("predicates.0.command.stdout_matches", {"predicates": [{"id": "p", "kind": "command", "cmd": "true",
                                                     "stdout_matches": BAD}]}),
    ("predicates.0.world_rows.where", {"tools": ["ledger.*"], "worlds": WORLDS, "predicates": [
        {"id": "p", "kind": "world_rows", "world": "ledger", "table": "entries", "where": {"memo": "re:" + BAD}}]}),
    ("predicates.0.tool_called.args", {"predicates": [{"id": "p", "kind": "tool_called", "tool": "shell",
                                           "args": {"command": {"nested": ["re:" + BAD]}}}]}),
])
def test_a_pattern_that_does_not_compile_is_refused_at_load_naming_its_field(tmp_path: Path, field: str,
                                                                              task: dict[str, Any]) -> None:
    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "c", **task})
    with pytest.raises(SpecError) as info:
        load_task(d)
    text = str(info.value)
    assert field in text and f"{BAD!r} is not a regular expression" in text and "task.yaml" in text, text


def test_a_literal_re_prefix_where_values_are_not_patterns_is_left_alone(tmp_path: Path) -> None:
    """json_value compares values for equality: a string starting with "re:" there is a value."""
    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "c", "predicates": [
        {"id": "p", "kind": "json_value", "path": "x.json", "expect": {"/a": "re:" + BAD}}]})
    assert load_task(d).spec.predicates[0].expect == {"/a": "re:" + BAD}


def test_a_fixture_entry_the_workspace_copy_would_drop_is_refused_at_load(tmp_path: Path) -> None:
    """A FIFO (or socket, or device) in a task, or a workspace file deeper than the copy takes:
    the agent's workspace would silently lack it. The task is refused, naming the entry."""
    import os

    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "c", "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}]},
                   workspace={"ok.txt": "x"})
    os.mkfifo(d / "workspace" / "pipe")
    deep = d / "workspace" / Path(*["d"] * 70)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x")
    with pytest.raises(SpecError) as info:
        load_task(d)
    text = str(info.value)
    assert "pipe" in text and "not a regular file" in text, text
    assert "f.txt" in text and "levels deep" in text, text
