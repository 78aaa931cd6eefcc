"""Where a task asks the judge: its final predicates and every conversation turn's, each named by
the field of task.yaml that declares it."""

from __future__ import annotations

from assay.judge.uses import is_judged, judge_uses
from assay.spec.task import TaskSpec


def _judge(pid: str) -> dict:
    return {"id": pid, "kind": "judge", "judge": "judge.yaml", "calibration": "calibration.json"}


def test_judges_are_found_in_the_final_predicates_and_in_every_turn() -> None:
    spec = TaskSpec.model_validate({"id": "t", "category": "c", "predicates": [
        {"id": "f", "kind": "file_exists", "path": "x"}, _judge("final")],
        "conversation": {"turns": [{"predicates": [{"id": "a", "kind": "file_exists", "path": "x"}]},
                                   {"user": "next", "predicates": [{"id": "b", "kind": "file_exists", "path": "x"},
                                                                    _judge("t2")]}]}})
    uses = judge_uses(spec)
    assert [(u.check.id, u.field, u.turn) for u in uses] == [
        ("final", "predicates.1", None), ("t2", "conversation.turns.1.predicates.1", 2)]
    assert is_judged(spec)


def test_a_judge_only_inside_a_turn_still_makes_the_task_judged() -> None:
    spec = TaskSpec.model_validate({"id": "t", "category": "c", "predicates": [
        {"id": "f", "kind": "file_exists", "path": "x"}],
        "conversation": {"turns": [{"predicates": [_judge("t1")]}]}})
    assert is_judged(spec) and judge_uses(spec)[0].field == "conversation.turns.0.predicates.0"
    plain = TaskSpec.model_validate({"id": "t", "category": "c", "predicates": [
        {"id": "f", "kind": "file_exists", "path": "x"}]})
    assert not is_judged(plain) and judge_uses(plain) == []
