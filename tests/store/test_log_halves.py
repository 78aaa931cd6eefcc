"""A large results log is indexed in halves at once, the second by a process of its own
(store/log_child.py:index_in_halves): the index is the one a single pass builds, wherever the log
is split and whatever the second process does (fails to start, dies, sends garbage, sends a part
under another key or from elsewhere)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import assay.store.log_child as log_child
from assay.store.log_child import index_in_halves, split_at
from assay.store.results_log import LOG, LogIndex
from tests.score.synth import attempt


def _log(root: Path, n: int = 12) -> list[int]:
    """A log of n results (a retry among them), a line that is JSON but no result, a torn line in
    the middle fenced off by the next write, and a torn last line: where each line starts."""
    root.mkdir(parents=True, exist_ok=True)
    lines = [attempt(f"t{i % 4}", "code", "a", i // 4 + 1, ["pass", "fail"][i % 2]).model_dump_json().encode()
             for i in range(n)]
    lines.insert(3, attempt("t0", "code", "a", 1, "pass", attempt=2).model_dump_json().encode())
    lines.insert(5, b'{"note": "json, but no result"}')
    lines.insert(8, lines[8][: len(lines[8]) // 2])  # a torn write, then the newline that fenced it off
    data = b"".join(line + b"\n" for line in lines) + lines[0][:40]  # torn last line
    (root / LOG).write_bytes(data)
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    return starts


def test_any_split_joined_is_the_index_of_one_pass(tmp_path: Path) -> None:
    starts = _log(tmp_path)
    key = bytes(range(16))
    whole = LogIndex(tmp_path, key=key)
    assert len(whole) == 13 and whole.odd and whole.end < (tmp_path / LOG).stat().st_size  # the torn tail left out
    for mid in starts[1:] + [whole.end]:
        first = LogIndex(tmp_path, key=key, stop=mid)
        assert first.end == mid
        assert first.join(LogIndex(tmp_path, key=key, start=mid)), mid
        first._sort()
        whole._sort()
        assert first.state() == whole.state(), mid


def test_a_part_that_does_not_follow_on_is_refused(tmp_path: Path) -> None:
    starts = _log(tmp_path)
    key = bytes(16)
    first = LogIndex(tmp_path, key=key, stop=starts[6])
    before = first.state()
    assert not first.join(LogIndex(tmp_path, key=bytes([1]) * 16, start=starts[6]))  # another key
    assert not first.join(LogIndex(tmp_path, key=key, start=starts[7]))  # a line left out
    assert not first.join(LogIndex(tmp_path, key=key, start=starts[5]))  # a line twice
    assert first.state() == before


def test_the_split_is_where_a_line_starts(tmp_path: Path) -> None:
    starts = _log(tmp_path)
    mid = split_at(tmp_path / LOG)
    assert mid in starts and mid >= (tmp_path / LOG).stat().st_size // 2
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / LOG).write_bytes(b'{"no": "newline after the middle"}')
    assert split_at(tmp_path / "other" / LOG) is None
    assert split_at(tmp_path / "missing" / LOG) is None


def _same(a: LogIndex, b: LogIndex) -> None:
    sa, sb = a.state(), b.state()
    sa.pop("_key"), sb.pop("_key")
    for name in ("_h", "_sorted_h"):  # the keyed hashes differ with the key: compare what they index
        sa.pop(name), sb.pop(name)
    assert sa.keys() == sb.keys()
    for name in sa:
        if name not in ("_sorted_i", "_lone"):
            assert sa[name] == sb[name], name
    for tid in ("t0.base.a.r1", "t1.base.a.r1", "t3.base.a.r3", "t9.base.a.r1"):
        assert [(a.attempt(i), a.offset(i)) for i in a.entries(tid, mark=False)] == \
               [(b.attempt(i), b.offset(i)) for i in b.entries(tid, mark=False)], tid


def test_the_second_half_from_a_process_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _log(tmp_path, 40)
    spawned: list[list[str]] = []
    real = log_child.part_command

    def recording(root: Path, start: int) -> list[str]:
        spawned.append(real(root, start))
        return spawned[-1]

    monkeypatch.setattr(log_child, "part_command", recording)
    got = index_in_halves(tmp_path)
    assert spawned and spawned[0][-2:] == ["part", str(split_at(tmp_path / LOG))]
    assert str(got._key) not in " ".join(spawned[0])  # the key never on a command line
    want = LogIndex(tmp_path, key=got._key)
    assert got.state() == want.state()


#: what a second process may do instead of its part: each costs only time
FAULTS = {
    "cannot start": [sys.executable + "-missing"],
    "dies": [sys.executable, "-c", "import sys; sys.stdin.buffer.read(16); sys.exit(3)"],
    "garbage": [sys.executable, "-c",
                "import sys; sys.stdin.buffer.read(16); sys.stdout.buffer.write(b'not a pickle')"],
    "not a state": [sys.executable, "-c", "import sys, pickle; sys.stdin.buffer.read(16); "
                    "sys.stdout.buffer.write(pickle.dumps([1, 2]))"],
}


@pytest.mark.parametrize("fault", [*FAULTS, "another key", "from elsewhere", "fails after its part"])
def test_a_second_process_that_fails_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      fault: str) -> None:
    starts = _log(tmp_path, 40)
    if fault in FAULTS:
        command = FAULTS[fault]
    else:  # a well-formed part, but not the one asked for
        start = {"another key": "{mid}", "from elsewhere": str(starts[3]), "fails after its part": "{mid}"}[fault]
        key = "bytes(16)" if fault == "another key" else "sys.stdin.buffer.read(16)"
        code = ("import sys, pickle; from pathlib import Path; from assay.store.results_log import LogIndex; "
                f"k = {key}; sys.stdin.buffer.read(); "
                f"part = LogIndex(Path({str(tmp_path)!r}), key=k, start={start}); "
                "sys.stdout.buffer.write(pickle.dumps(part.state()))"
                + ("; sys.stdout.flush(); sys.exit(1)" if fault == "fails after its part" else ""))
        command = [sys.executable, "-c", code]

    def faulty(root: Path, start: int) -> list[str]:
        return [part.replace("{mid}", str(start)) for part in command]

    monkeypatch.setattr(log_child, "part_command", faulty)
    got = index_in_halves(tmp_path)
    assert got.state() == LogIndex(tmp_path, key=got._key).state()


def test_a_large_log_is_indexed_in_halves_by_the_scans_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan's child is told to index in halves on two or more cores; the index it sends is the
    one built here."""
    _log(tmp_path, 40)
    monkeypatch.setattr(log_child, "CHILD_FROM", 0)
    monkeypatch.setattr(log_child, "HALVES_FROM", 0)
    monkeypatch.setattr(log_child, "usable_cores", lambda: 2)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    spawned: list[list[str]] = []
    real = log_child.subprocess.Popen

    def popen(argv: list[str], **kw: Any) -> Any:
        spawned.append(list(argv))
        return real(argv, **kw)

    monkeypatch.setattr(log_child.subprocess, "Popen", popen)
    pending = log_child.PendingIndex(tmp_path)
    got = pending.result()
    assert spawned and spawned[0][-1] == "halves"
    _same(got, LogIndex(tmp_path))
    monkeypatch.setattr(log_child, "usable_cores", lambda: 1)
    spawned.clear()
    log_child.PendingIndex(tmp_path).result()
    assert spawned and "halves" not in spawned[0]  # one core: one pass
