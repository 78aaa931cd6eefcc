"""The walker of agent-made trees is bounded in entries and time: what it does not take is
reported as one unknown entry, so every reader records it instead of reading on."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.spec.digest import UNREADABLE, text_name, tree_digests
from assay.untrusted.tree import OVERFLOW, walk_untrusted


def _many(root: Path, n: int) -> Path:
    (root / "d").mkdir(parents=True)
    for i in range(n):
        (root / "d" / str(i)).write_text("x")
    return root


def test_past_max_entries_the_walk_stops_with_the_overflow_entry(tmp_path: Path) -> None:
    root = _many(tmp_path / "t", 120)
    got = list(walk_untrusted(root, max_entries=50))
    assert len(got) == 51 and got[-1][0] == OVERFLOW and got[-1][2] is None
    assert len(list(walk_untrusted(root, max_entries=None))) == 121  # the harness's own bookkeeping: all


def test_past_the_deadline_the_walk_stops_with_the_overflow_entry(tmp_path: Path) -> None:
    root = _many(tmp_path / "t", 5)
    got = list(walk_untrusted(root, deadline_s=0.0))
    assert got[-1][0] == OVERFLOW and all(st is not None for _, _, st in got[:-1])


def test_digests_of_an_overflowing_tree_record_the_rest_as_unreadable(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = _many(tmp_path / "t", 60)
    monkeypatch.setitem(walk_untrusted.__kwdefaults__, "max_entries", 20)
    d = tree_digests(root, budget=1 << 20)
    assert d[text_name(OVERFLOW)] == UNREADABLE and len(d) < 60
