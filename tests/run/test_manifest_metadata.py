"""A task's typed metadata (difficulty, authors, time estimates) is bound into the run's
manifest beside the task's digest, so what a run covered can be grouped by it from the run
directory alone; a malformed value is refused when the task loads, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import SpecError
from assay.run import RunOptions, start_run
from assay.spec.load import load_suite
from tests.conftest import write_suite, write_task


def _suite(root: Path, metadata: object) -> Path:
    s = write_suite(root)
    write_task(s, "t", task={"category": "code", "metadata": metadata,
                             "predicates": [{"id": "f", "kind": "file_exists", "path": "out.txt"}]})
    return s


def test_the_manifest_carries_the_tasks_metadata(tmp_path: Path) -> None:
    s = _suite(tmp_path / "s", {"difficulty": "hard", "authors": [{"name": "A", "email": "a@x"}],
                                "expert_time_min": 5, "junior_time_min": 25})
    out = start_run(RunOptions(suite=s, agents=["nop"], out=tmp_path / "run", sandbox="host"))
    [rec] = out.run_dir.manifest().tasks
    assert rec.metadata is not None and (rec.metadata.difficulty, rec.metadata.expert_time_min,
                                         rec.metadata.junior_time_min) == ("hard", 5, 25)
    assert rec.metadata.authors[0].email == "a@x"


@pytest.mark.parametrize(("metadata", "field"), [({"expert_time_min": -3}, "expert_time_min"),
                                                  ({"difficulty": "hard", "minutes": 3}, "minutes")])
def test_a_malformed_metadata_is_refused_naming_the_field(tmp_path: Path, metadata: dict, field: str) -> None:
    with pytest.raises(SpecError) as e:
        load_suite(_suite(tmp_path / "s", metadata))
    assert any(field in f"{p.field} {p.message}" and p.file.endswith("task.yaml") for p in e.value.problems), e.value
