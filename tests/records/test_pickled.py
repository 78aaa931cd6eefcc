"""Records that cross between assay's processes once per trial pickle as their fields in order, and
come back equal: the reading processes' trial folders (with their trace's sight), the trace facts
inside a trial row sent to the folding process."""

from __future__ import annotations

import pickle
import pickletools
from dataclasses import dataclass, field
from pathlib import Path

from assay.records.pickled import positional_pickle
from assay.records.trial_row import TraceFacts
from assay.score.trial_sight import TraceSight, TrialSight, load_chunk
from assay.score.trials import fold_trial
from assay.store.scan_read import Loaded
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter
from tests.score.synth import attempt, write_run


@positional_pickle
@dataclass(slots=True)
class _Derived:
    a: int
    b: list[str] = field(default_factory=list)
    total: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.total = self.a + len(self.b)


@positional_pickle
@dataclass
class _One:
    only: dict[str, int]


def _ops(data: bytes) -> set[str]:
    return {op.name for op, _arg, _pos in pickletools.genops(data)}


def test_fields_in_order_a_derived_field_computed_again_and_one_field_alone() -> None:
    d = _Derived(3, ["x", "y"])
    back = pickle.loads(pickle.dumps(d))
    assert back == d and back.total == 5
    assert pickle.loads(pickle.dumps(_One({"k": 1}))) == _One({"k": 1})
    # the class called with its fields: no reconstructor and no state dict set afterwards
    assert "BUILD" not in _ops(pickle.dumps(d, protocol=5)) and "NEWOBJ" not in _ops(pickle.dumps(d, protocol=5))


def test_a_real_trial_folder_as_a_reading_process_sends_it(tmp_path: Path) -> None:
    r = attempt("t", "code", "a", 1, "pass")
    rd = write_run(tmp_path / "run", {"code": 1}, [r])
    w = TraceWriter(rd.trace_path(r.trial_id), r.trial_id)
    w.attempt = 1
    w.emit(Source.harness, EventKind.attempt_started, {})
    w.emit(Source.agent, EventKind.tool_call, {"call_id": "1", "name": "sh", "arguments": {"cmd": "cat /tests/x"}})
    w.emit(Source.agent, EventKind.tool_result, {"call_id": "1", "name": "sh", "ok": False})
    w.emit(Source.harness, EventKind.attempt_ended, {})
    (loaded,) = load_chunk(str(rd.path), [(r.trial_id, True)], True)
    assert isinstance(loaded, Loaded) and isinstance(loaded.extra, TrialSight)
    sight = loaded.extra.trace
    assert isinstance(sight, TraceSight) and sight.facts[1].tool_calls == 1 and sight.facts[1].tool_errors == 1
    back = pickle.loads(pickle.dumps([loaded], protocol=pickle.HIGHEST_PROTOCOL))[0]
    assert back == loaded and back.extra.trace.facts == sight.facts and back.extra.trace.flags == sight.flags
    # and in a trial's row, as the folding process receives it
    row = fold_trial([r], trace=sight.facts[1])
    assert isinstance(row.trace, TraceFacts) and pickle.loads(pickle.dumps(row)) == row
