"""`assay verify` hashes a run's score versions in a thread while it reads the trials
(store/prehash.py). What it hashed early is used at the end only if the file is still the one
hashed: anything written to it, renamed over it or linked in its place since is caught as before."""

from __future__ import annotations

import gc
import hashlib
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from assay.score import write_score
from assay.store import prehash as prehash_mod
from assay.store import scan_rest
from assay.store.integrity import verify_run
from assay.store.prehash import PIECE, Prehash
from assay.store.rundir import RunDir
from assay.store.scan import RunScan
from tests.score.v1_runs import build


def _run_with_scores(path: Path) -> tuple[RunDir, list[Path]]:
    run = build(path, "mixed")
    first = write_score(run)
    second = write_score(run)
    versions = [first, first.with_name("score-0001.trials.jsonl"), second, second.with_name("score-0002.trials.jsonl")]
    assert all(p.is_file() for p in versions)
    return RunDir.open(run), versions


def _scan_until_the_end(rd: RunDir) -> RunScan:
    """A verify's scan with every trial read and its thread's hashing over: what finish() sees."""
    scan = RunScan(rd, verify=True, workers=0)
    for _read in scan.trials(scan.all_trials()):
        pass
    assert scan._prehash is not None
    scan._prehash._thread.join()
    return scan


def test_the_score_versions_are_not_hashed_again_at_the_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rd, versions = _run_with_scores(tmp_path / "r")
    hashed: list[str] = []
    real = scan_rest.sha256_file

    def counting(p: Path) -> str:
        hashed.append(Path(p).name)
        return real(p)

    monkeypatch.setattr(scan_rest, "sha256_file", counting)
    scan = _scan_until_the_end(rd)
    checked, problems = scan.finish()
    assert problems == [] and checked > len(versions)
    assert not {p.name for p in versions} & set(hashed), hashed  # each taken from the thread's reading
    assert "manifest.json" in hashed  # what the thread does not hash is hashed at the end, as before


def test_a_score_version_rewritten_after_the_thread_hashed_it_is_named(tmp_path: Path) -> None:
    """The attack the early reading opens: the rows hashed intact, then changed before the end. The
    same size, the same modification time put back: the change time still says so."""
    rd, versions = _run_with_scores(tmp_path / "r")
    side = versions[1]
    scan = _scan_until_the_end(rd)
    st = side.stat()
    data = side.read_bytes()
    forged = data.replace(b'"end_state":"fail"', b'"end_state":"pass"', 1)
    assert forged != data and len(forged) == len(data)
    with open(side, "r+b") as f:  # in place: the same inode
        f.write(forged)
    os.utime(side, ns=(st.st_atime_ns, st.st_mtime_ns))
    _checked, problems = scan.finish()
    assert any(p.startswith("scores/score-0001.trials.jsonl: modified after it was written") for p in problems), problems


def test_a_score_version_renamed_over_after_the_thread_hashed_it_is_named(tmp_path: Path) -> None:
    rd, versions = _run_with_scores(tmp_path / "r")
    side = versions[3]
    scan = _scan_until_the_end(rd)
    other = side.with_name(".forged")
    other.write_bytes(side.read_bytes().replace(b'"end_state":"fail"', b'"end_state":"pass"', 1))
    os.replace(other, side)
    _checked, problems = scan.finish()
    assert any(p.startswith("scores/score-0002.trials.jsonl: modified after it was written") for p in problems), problems


def test_a_score_version_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    """A link to an intact copy in the version's place: the thread opens nothing through it and the
    end names it, as verify always did."""
    rd, versions = _run_with_scores(tmp_path / "r")
    side = versions[1]
    copy = tmp_path / "intact-copy"
    copy.write_bytes(side.read_bytes())
    side.unlink()
    side.symlink_to(copy)
    scan = _scan_until_the_end(rd)
    assert "scores/score-0001.trials.jsonl" not in scan._prehash._got  # type: ignore[union-attr]
    _checked, problems = scan.finish()
    assert any(p.startswith("scores/score-0001.trials.jsonl: now a link") for p in problems), problems


def test_every_check_of_verify_still_holds_with_the_thread(tmp_path: Path) -> None:
    rd, versions = _run_with_scores(tmp_path / "r")
    assert verify_run(rd.path).ok
    versions[0].write_text(versions[0].read_text().replace('"passes"', '"passes" ', 1))
    versions[2].unlink()
    problems = verify_run(rd.path).problems
    assert any(p.startswith("scores/score-0001.json: modified after it was written") for p in problems), problems
    assert any(p.startswith("scores/score-0002.json: deleted after it was written") for p in problems), problems


def test_a_file_changed_while_it_is_hashed_gives_no_early_digest(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece read, then the file written to by someone else: its identity before and after the
    hashing differ, so the thread keeps no digest and the end hashes it again."""
    big = tmp_path / "big"
    with open(big, "wb") as f:
        f.truncate(3 * PIECE)
    pre = Prehash(tmp_path, [])  # nothing to hash in its thread: its reading is called here
    pre._thread.join()
    view = memoryview(bytearray(PIECE))

    class Racing:
        """sha256 whose first piece is followed by a write to the file being hashed."""

        def __init__(self) -> None:
            self.h, self.wrote = hashlib.sha256(), False

        def update(self, data: memoryview) -> None:
            self.h.update(data)
            if not self.wrote:
                with open(big, "r+b") as f:
                    f.seek(2 * PIECE)
                    f.write(b"x")
                self.wrote = True

        def hexdigest(self) -> str:
            return self.h.hexdigest()

    monkeypatch.setattr(prehash_mod, "hashlib", SimpleNamespace(sha256=Racing))
    assert pre._hash(str(big), view) is None
    monkeypatch.undo()
    got = pre._hash(str(big), view)  # untouched since: hashed, and the digest of what is there
    assert got is not None and got[0] == hashlib.sha256(big.read_bytes()).hexdigest()


def _read_so_far(path: Path) -> int:
    """How far this process has read into ``path`` through a descriptor open on it (-1: none open)."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                info = Path(f"/proc/self/fdinfo/{fd}").read_text()
                return int(info.split("pos:", 1)[1].split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return -1


def test_a_scan_let_go_before_its_end_stops_hashing(tmp_path: Path) -> None:
    """Score versions far larger than a test reads (sparse files): the scan is dropped, its thread
    ends at its next piece instead of hashing the rest."""
    rd, versions = _run_with_scores(tmp_path / "r")
    for p in versions:
        with open(p, "r+b") as f:
            f.truncate(4 << 30)  # 4 GiB each, no blocks on disk: about 10 s of hashing each
    scan = RunScan(rd, verify=True, workers=0)
    pre = scan._prehash
    assert pre is not None and pre.running
    first = min(versions, key=lambda p: p.relative_to(rd.path).as_posix())
    deadline = time.monotonic() + 60
    while _read_so_far(first) <= 0:  # the thread is inside its first file
        assert time.monotonic() < deadline and pre.running
    del scan
    gc.collect()
    pre._thread.join(timeout=120)
    assert not pre.running
    assert pre._got == {}  # stopped inside the first (its hashing takes seconds), none taken whole


def test_a_scoring_scan_hashes_no_score_version(tmp_path: Path) -> None:
    """A score, a report or an export reads no score version (outputs=False): no thread at all."""
    rd, _versions = _run_with_scores(tmp_path / "r")
    assert RunScan(rd, verify=True, workers=0, outputs=False)._prehash is None
    assert RunScan(rd, verify=False, workers=0)._prehash is None
