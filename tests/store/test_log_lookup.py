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
    untaken = list(index.untaken_trials())
    # every other trial once, in the log's order of its first line (a reader of them reads the log front to back)
    assert untaken == [(t, want[t]) for t in trials if t not in taken]
    assert list(index.untaken_trials()) == []  # each handed out once


@pytest.mark.parametrize("buckets", [1, 3])
def test_untaken_trials_whose_hashes_collide_are_told_apart(tmp_path: Path, buckets: int) -> None:
    """Every entry's hash forced into one (or three) values: the trials are told apart by their
    CRC-32 and still handed out whole, once each, in the log's order; a trial taken is left out."""
    lines = _log(random.Random(4), 600)
    _write(tmp_path, lines)
    index = LogIndex(tmp_path)
    for i in range(len(index)):
        index._h[i] = 7 + index._crc[i] % buckets  # one trial, one hash, as its id gives
    index._sort()
    want = _reference(lines)
    trials = list(dict.fromkeys(tid for tid, _n in lines))
    taken = trials[10]
    for i in want[taken]:
        index._seen[i] = 1  # taken by a reader (entries() would mark them so)
    assert list(index.untaken_trials()) == [(t, want[t]) for t in trials if t != taken]


def test_lines_indexed_while_untaken_trials_are_handed_out_wait_for_the_next_call(tmp_path: Path) -> None:
    """A reader of the same index refreshes it between two trials handed out (the log grew): the
    call goes on over the entries it sorted, and the new trial comes with the next call, once."""
    lines = _log(random.Random(5), 300)
    _write(tmp_path, lines)
    index = LogIndex(tmp_path)
    want = _reference(lines)
    trials = list(dict.fromkeys(tid for tid, _n in lines))
    got = []
    for k, item in enumerate(index.untaken_trials()):
        got.append(item)
        if k == 3:
            _write(tmp_path, [("late.base.agent0.r1", 1)])
            index.refresh()
    assert got == [(t, want[t]) for t in trials]
    assert list(index.untaken_trials()) == [("late.base.agent0.r1", [len(lines)])]
