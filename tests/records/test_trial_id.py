"""One parser of trial ids: records/trial_id.py. Every other module reads an id through it, so a
change of the id's format is one change (issue 24: the plan and the scorer had a copy each, the
replay backend a third)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.records.trial_id import parse_trial_id, trial_id

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"
#: a hand split of an id into its four parts
HAND_SPLIT = re.compile(r"""\.rsplit\(\s*["']\.["']\s*,\s*3\s*\)""")


def test_an_id_and_its_parts_round_trip_with_dots_in_the_task_id() -> None:
    tid = trial_id("suite.part.task", "base", "pi", 3)
    assert tid == "suite.part.task.base.pi.r3"
    assert parse_trial_id(tid) == ("suite.part.task", "base", "pi", 3)


@pytest.mark.parametrize("bad", ["task", "a.b.c", "a.b.c.3", "a.b.c.rx"])
def test_what_is_not_an_id_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_trial_id(bad)


def test_no_module_splits_a_trial_id_by_hand() -> None:
    own = SRC / "records" / "trial_id.py"
    found = [f"{p.relative_to(SRC)}:{n}" for p in sorted(SRC.rglob("*.py")) if p != own
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if HAND_SPLIT.search(line)]
    assert found == [], f"trial ids split by hand (use assay.records.trial_id.parse_trial_id): {found}"
