"""Looking a trial's lines up in the results log's index: whatever the order of the questions (the
log's own, which takes the index's shortcut; shuffled; repeated; trials with no line), the answer is
every line of that trial in the log's order, as a plain reading of the log gives it, and a trial
taken by a lookup is never handed out again as untaken."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.store.results_log import LOG, LogIndex


def _log(rng: random.Random, n_trials: int) -> list[tuple[str, int]]:
    """(trial id, attempt) per line: mostly one line a trial in order, some retries further on, some
    lines repeated (a tampered log), some trials whose lines are far apart."""
    lines: list[tuple[str, int]] = []
    for t in range(n_trials):
        tid = f"task{t % 97}.base.agent{t % 3}.r{t}"
        lines.append((tid, 1))
        roll = rng.random()
        if roll < 0.05:
            lines.append((tid, 2))  # a retry, right after
        elif roll < 0.08 and lines:
            lines.insert(rng.randrange(len(lines)), (tid, 2))  # a line of the same trial elsewhere
        elif roll < 0.10:
            lines.append(lines[rng.randrange(len(lines))])  # a repeated line
    return lines


def _write(root: Path, lines: list[tuple[str, int]]) -> None:
    with open(root / LOG, "ab") as f:
        for tid, n in lines:
            f.write(json.dumps({"trial_id": tid, "attempt": n, "end_state": "pass"}).encode() + b"\n")


def _reference(lines: list[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, (tid, _n) in enumerate(lines):
        out.setdefault(tid, []).append(i)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lookups_in_any_order_give_every_line_of_the_trial(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    lines = _log(rng, 6000)  # more than 4,096 lines: the index is sorted, and its shortcut is live
    _write(tmp_path, lines)
    index = LogIndex(tmp_path)
    want = _reference(lines)
    in_log_order = list(dict.fromkeys(tid for tid, _n in lines))
    assert [index.entries(t, mark=False) for t in in_log_order] == [want[t] for t in in_log_order]
    shuffled = in_log_order[:]
    rng.shuffle(shuffled)
    asked = shuffled + ["task1.base.agent1.r999999", "", "task0.base.agent0.r0x"] + in_log_order[::-1]
    assert [index.entries(t, mark=False) for t in asked] == [want.get(t, []) for t in asked]
    # lines appended since the sort (a live run): looked up too, however the question comes
    more = [(f"late.base.agent0.r{k}", 1) for k in range(20)] + [(in_log_order[5], 3), (in_log_order[0], 1)]
    _write(tmp_path, more)
    index.refresh()
    want = _reference(lines + more)
    asked = list(dict.fromkeys(tid for tid, _n in lines + more))
    assert [index.entries(t, mark=False) for t in asked] == [want[t] for t in asked]


def test_a_trial_looked_up_is_not_untaken_and_every_other_is(tmp_path: Path) -> None:
    rng = random.Random(9)
    lines = _log(rng, 5000)
    _write(tmp_path, lines)
    index = LogIndex(tmp_path)
    trials = list(dict.fromkeys(tid for tid, _n in lines))
    taken = set(trials[: len(trials) // 2])  # the first half in the log's order: the shortcut marks them
    for t in trials[: len(trials) // 2]:
        assert index.entries(t)
    want = _reference(lines)
    untaken = dict(index.untaken_trials())
    assert untaken == {t: want[t] for t in trials if t not in taken}
