"""A real world session for tests: real tool server on loopback, real SQLite, real trace file."""

from __future__ import annotations

from pathlib import Path
from typing import Any, AsyncIterator

import pytest

from assay.harness.services import AttemptHandle
from assay.spec.budget import Budget
from assay.spec.load import LoadedTask
from assay.spec.task import TaskSpec
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter, read_events
from assay.worlds.service import WorldService

LEDGER = {"categories": ["dining", "groceries", "transport", "shopping"],
          "entries": [{"date": "2026-03-01", "amount": 32.5, "category": "transport", "merchant": "Metro"}]}


def make_task(tmp: Path, **fields: Any) -> LoadedTask:
    data: dict[str, Any] = {"id": "t", "category": "c", "predicates": [{"id": "p", "kind": "file_exists", "path": "x"}],
                            "tools": ["ledger.*", "outbox.*", "tickets.*"], "worlds": {"ledger": LEDGER}}
    data.update(fields)
    return LoadedTask(spec=TaskSpec.model_validate(data), dir=tmp, prompt="", file_digests={})


def make_handle(tmp: Path, task: LoadedTask, *, attempt: int = 1, run_dir: Path | None = None) -> AttemptHandle:
    run_dir = run_dir or tmp / "run"
    red = Redactor()
    trace = TraceWriter(run_dir / "trials" / "t.base.x.r1" / "trace.jsonl", "t.base.x.r1", redactor=red)
    trace.attempt = attempt
    scratch = tmp / f"scratch{attempt}"
    (scratch / "home").mkdir(parents=True, exist_ok=True)
    (scratch / "workspace").mkdir(parents=True, exist_ok=True)
    attempt_dir = run_dir / "trials" / "t.base.x.r1" / "attempts" / str(attempt)
    attempt_dir.mkdir(parents=True, exist_ok=True)
    return AttemptHandle(run_id="run", trial_id="t.base.x.r1", attempt=attempt, task=task, variant="base",
                         agent="x", trace=trace, redactor=red, budget=Budget(), attempt_dir=attempt_dir, scratch=scratch)


def events(handle: AttemptHandle) -> list[Any]:
    return read_events(handle.trace.path, attempt=handle.attempt)


@pytest.fixture
async def service() -> AsyncIterator[WorldService]:
    svc = WorldService()
    await svc.start()
    try:
        yield svc
    finally:
        await svc.stop()
