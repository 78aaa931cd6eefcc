"""The workspace diff artifact, built over a hostile workspace on a real disk."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from assay.store.workspace_diff import DiffLimits, build_workspace_diff, read_workspace_diff, scan
from assay.untrusted.archive import ArchiveError, read_tar_zst, write_tar_zst


@pytest.fixture
def before(tmp_path: Path) -> Path:
    d = tmp_path / "before"
    (d / "src").mkdir(parents=True)
    (d / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (d / "notes.txt").write_text("keep me\n")
    (d / "old.txt").write_text("to be deleted\n")
    return d


def workspace_from(before: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    os.system(f"cp -a {before} {ws}")
    return ws


def by_path(diff) -> dict:
    return {e["path"]: e for e in diff.entries}


def test_added_changed_deleted_with_digests_and_contents(before: Path, tmp_path: Path) -> None:
    initial = scan(before)
    ws = workspace_from(before, tmp_path)
    (ws / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (ws / "old.txt").unlink()
    (ws / "new.bin").write_bytes(b"\x00\x01binary")
    diff = read_workspace_diff(build_workspace_diff(ws, initial, before=before))
    e = by_path(diff)
    assert set(e) == {"src/calc.py", "old.txt", "new.bin"}  # notes.txt unchanged: not listed
    assert e["src/calc.py"]["status"] == "changed"
    assert e["src/calc.py"]["after"]["sha256"] == hashlib.sha256((ws / "src/calc.py").read_bytes()).hexdigest()
    assert diff.content(e["src/calc.py"]) == (ws / "src/calc.py").read_bytes()
    assert diff.content(e["src/calc.py"], "before") == (before / "src/calc.py").read_bytes()
    assert e["old.txt"]["status"] == "deleted" and e["old.txt"]["after"] is None
    assert e["old.txt"]["before"]["sha256"] == hashlib.sha256(b"to be deleted\n").hexdigest()
    assert e["new.bin"]["status"] == "added" and diff.content(e["new.bin"]) == b"\x00\x01binary"
    assert not diff.truncated


def test_links_are_recorded_never_followed_and_odd_names_kept(before: Path, tmp_path: Path) -> None:
    secret = tmp_path / "host-secret.txt"
    secret.write_text("TOP SECRET")
    initial = scan(before)
    ws = workspace_from(before, tmp_path)
    os.symlink(secret, ws / "leak")
    os.symlink(tmp_path, ws / "dirlink")
    os.mkfifo(ws / "pipe")
    raw = b"bad\xffname.txt"
    with open(os.path.join(os.fsencode(ws), raw), "wb") as f:
        f.write(b"odd")
    blob = build_workspace_diff(ws, initial, before=before)
    diff = read_workspace_diff(blob)
    e = by_path(diff)
    assert e["leak"]["after"] == {"type": "symlink", "target": str(secret)} and diff.content(e["leak"]) is None
    assert e["dirlink"]["after"]["type"] == "symlink"
    assert not any(p.startswith("dirlink/") for p in e)  # a linked folder is not descended into
    assert e["pipe"]["after"] == {"type": "special"}
    odd = e["bad\\xffname.txt"]
    assert base64.b64decode(odd["path_b64"]) == raw and diff.content(odd) == b"odd"
    assert b"TOP SECRET" not in b"".join(diff.contents.values())


def test_size_caps_truncate_and_say_so(before: Path, tmp_path: Path) -> None:
    initial = scan(before)
    ws = workspace_from(before, tmp_path)
    (ws / "big.txt").write_bytes(b"a" * 5000)
    for i in range(10):
        (ws / f"f{i}.txt").write_text(str(i))
    limits = DiffLimits(max_entries=5, max_file_bytes=1000, max_total_bytes=1500)
    diff = read_workspace_diff(build_workspace_diff(ws, initial, before=before, limits=limits))
    assert diff.truncated and diff.omitted_entries == 11 - 5  # 11 files added, 5 kept
    big = by_path(diff)["big.txt"]
    assert big["after"]["size"] == 5000 and big["after_truncated"] and len(diff.content(big)) == 1000
    assert sum(len(v) for v in diff.contents.values()) <= 1500
    assert diff.limits["max_entries"] == 5


def test_redaction_runs_over_contents_digests_stay_true(before: Path, tmp_path: Path) -> None:
    initial = scan(before)
    ws = workspace_from(before, tmp_path)
    (ws / "leak.txt").write_bytes(b"key=sk-canary-123\n")
    diff = read_workspace_diff(build_workspace_diff(ws, initial, redact=lambda b: b.replace(b"sk-canary-123", b"[REDACTED]")))
    e = by_path(diff)["leak.txt"]
    assert diff.content(e) == b"key=[REDACTED]\n" and e["redacted"]
    assert e["after"]["sha256"] == hashlib.sha256(b"key=sk-canary-123\n").hexdigest()


def test_before_content_only_when_it_is_the_initial_file(before: Path, tmp_path: Path) -> None:
    ws = workspace_from(before, tmp_path)
    (ws / "notes.txt").write_text("setup wrote this\n")  # what setup left, unlike the fixture
    initial = scan(ws)
    (ws / "notes.txt").write_text("agent wrote this\n")
    diff = read_workspace_diff(build_workspace_diff(ws, initial, before=before))
    assert diff.content(by_path(diff)["notes.txt"], "before") is None


def test_archive_reader_is_bounded_and_rejects_non_files() -> None:
    blob = write_tar_zst([("a", b"x" * 10_000, 0o644)])
    assert read_tar_zst(blob)["a"] == b"x" * 10_000
    with pytest.raises(ArchiveError, match="more than"):
        read_tar_zst(blob, limit=1000)
    with pytest.raises(ArchiveError):
        read_tar_zst(b"garbage")
