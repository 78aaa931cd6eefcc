"""A trial's workspace states (:mod:`assay.run.workspace`): the initial state taken from the
task once and reused must be exactly what a walk of each trial's copy gives; the one walk of
the final state must give the verifier the digests its own walk gave; and the verifier reads a
frozen workspace in place, never a copy, only where the agent's sandbox isolated it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.records.results import EndState
from assay.run import RunOptions, start_run
from assay.run import workspace as ws
from assay.sandbox.registry import get_backend
from assay.spec.digest import UNREADABLE, tree_digests
from assay.store.workspace_diff import scan
from assay.verify.snapshot import copy_snapshot
from tests.conftest import write_suite, write_task

BUDGET = 1 << 30


@pytest.fixture(autouse=True)
def _unmounted():
    """Workspaces these tests make directly (overlays where the kernel allows) are unmounted after."""
    yield
    from assay.sandbox import overlay_ws
    for target in list(overlay_ws._LIVE):
        overlay_ws.release(Path(target))


def fixture(root: Path) -> Path:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("x = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "empty.txt").write_bytes(b"")
    os.symlink("src/pkg/mod.py", root / "link")
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("not utf-8 name\n")
    return root


def test_cached_initial_state_is_what_each_copy_walks_to(tmp_path: Path) -> None:
    fx = fixture(tmp_path / "fx")
    cache: dict = {}
    for n in range(2):
        live = tmp_path / f"live{n}"
        ws.make_workspace(fx, live, ["out/logs"])
        got = ws.initial_state(fx, live, "k", setup_ran=False, budget=BUDGET, cache=cache)
        walked = ws.state_of(live, BUDGET)
        assert got.scan == walked.scan and got.digests == walked.digests
        assert (live / "out" / "logs").is_dir()
    assert len(cache) == 1  # walked once for the task


def test_after_setup_the_live_workspace_is_walked(tmp_path: Path) -> None:
    fx = fixture(tmp_path / "fx")
    live = tmp_path / "live"
    ws.make_workspace(fx, live, [])
    (live / "generated.log").write_text("by setup\n")
    cache: dict = {}
    got = ws.initial_state(fx, live, "k", setup_ran=True, budget=BUDGET, cache=cache)
    assert "generated.log" in got.digests and not cache


def test_one_walk_gives_the_verifiers_digests_of_a_hostile_tree(tmp_path: Path) -> None:
    """The digests from the scan equal those the verifier took from its own copy before:
    links as links (one pointing out), a file past the budget unhashed, a FIFO unknown."""
    root = fixture(tmp_path / "w")
    os.symlink("/etc/passwd", root / "out-link")
    (root / "big.bin").write_bytes(b"x" * 4096)
    os.mkfifo(root / "pipe")
    budget = 100  # smaller than big.bin
    state = ws.state_of(root, budget)
    copy = tmp_path / "copy"
    skipped = copy_snapshot(root, copy)
    before = tree_digests(copy, budget=budget)
    for rel in skipped:
        before.setdefault(rel, UNREADABLE)
    assert state.digests == dict(sorted(before.items()))
    assert state.digests["big.bin"].startswith("unhashed:") and state.digests["pipe"] == UNREADABLE
    assert state.unreadable == ["pipe"]
    assert state.scan == scan(root, hash_budget=budget)


def suite_with_two_predicates(tmp_path: Path) -> Path:
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "budget": {"wall_time_s": 30}, "risk": "read_only",
                             "outputs": ["out.txt"], "predicates": [
                                 {"id": "state", "kind": "file_contains", "path": "out.txt", "text": "done"},
                                 {"id": "same", "kind": "unchanged", "exclude": ["out.txt"]},
                                 {"id": "code", "kind": "command", "cmd": "grep -q done out.txt"}]},
               workspace={"keep/a.txt": "a\n", "b.txt": "b\n"}, solution="echo done > out.txt\n")
    return s


@pytest.mark.skipif(not get_backend("bwrap").status().usable, reason="bubblewrap is not usable here")
def test_isolated_verifier_reads_the_frozen_workspace_in_place(tmp_path: Path) -> None:
    s = suite_with_two_predicates(tmp_path)
    results = start_run(RunOptions(suite=s, agents=["oracle", "nop"], out=tmp_path / "run", sandbox="bwrap")).results
    r, nop = sorted(results, key=lambda x: x.agent != "oracle")
    assert nop.end_state is EndState.failed
    assert r.end_state is EndState.passed and not r.incidents, r.model_dump_json(indent=1)[:2000]


def test_in_place_only_when_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The verifier copies the workspace where the backend does not isolate, and reads it in
    place where it does: seen from the verifier's own directory."""
    from assay.verify import verifier

    seen: list[tuple[bool, Path]] = []

    def observe(root: Path, *args: object, work: Path | None = None, **kw: object) -> None:
        seen.append(((root / "work").exists(), Path(work) if work else root / "work"))

    monkeypatch.setattr(verifier, "OBSERVERS", [observe])
    s = suite_with_two_predicates(tmp_path)
    [r] = start_run(RunOptions(suite=s, agents=["oracle"], out=tmp_path / "host", sandbox="host")).results
    assert r.end_state is EndState.passed
    assert seen[-1][0] is True  # host backend: a copy under the verifier's directory
    if get_backend("bwrap").status().usable:
        [r] = start_run(RunOptions(suite=s, agents=["oracle"], out=tmp_path / "bwrap", sandbox="bwrap")).results
        assert r.end_state is EndState.passed
        copied, work = seen[-1]
        assert copied is False and work.name == "workspace"  # the attempt's own workspace, no copy


@pytest.mark.skipif(not get_backend("bwrap").status().usable, reason="bubblewrap is not usable here")
def test_read_only_write_still_found_in_place(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "budget": {"wall_time_s": 30}, "risk": "read_only",
                             "predicates": [{"id": "x", "kind": "file_exists", "path": "b.txt"}]},
               workspace={"b.txt": "b\n"}, solution="echo changed > b.txt\n")
    [r] = start_run(RunOptions(suite=s, agents=["oracle"], out=tmp_path / "run", sandbox="bwrap")).results
    assert any(i.type == "read_only_write" for i in r.incidents), r.incidents


def test_empty_dirs_are_never_made_through_a_link(tmp_path: Path) -> None:
    from assay.spec.task_env import make_empty_dirs

    live, outside = tmp_path / "live", tmp_path / "outside"
    live.mkdir()
    outside.mkdir()
    os.symlink(outside, live / "out")
    with pytest.raises(ValueError, match="already a file or a link"):
        make_empty_dirs(live, ["out/logs"])
    assert list(outside.iterdir()) == []
