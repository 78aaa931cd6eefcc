"""The harness reads the workspace an agent wrote (the verifier's copy, the digests, the final
state scan); a hostile agent shapes it to make those reads cost the harness, or fail.

Sparse files: ``truncate -s 256G`` costs the agent no disk at all, so the
sandbox's disk bound (blocks written) never sees it. The harness reads that workspace after the
agent: the verifier's copy and the final-state scan must cost what the file really holds, not
what it claims to hold (a plain copy would write 256 GiB of zeros to the host, a plain digest
would read them)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.spec.digest import UNREADABLE, tree_digests
from assay.store.workspace_diff import DiffLimits, build_workspace_diff, read_workspace_diff, scan
from assay.untrusted.tree import MAX_DEPTH, walk_untrusted
from assay.verify.snapshot import copy_snapshot
from tests.conftest import write_agent, write_suite, write_task

CLAIMED = 256 << 30


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """These tests nest folders past what pytest's own cleanup can remove (its rmtree recurses,
    and a deep leftover from a killed session would crash every later session's cleanup): their
    folder lives outside pytest's temp root and is removed here, at any depth."""
    from assay.untrusted.tree import remove_untrusted

    root = Path(tempfile.mkdtemp(prefix="assay-hostile-reads-"))
    try:
        yield root
    finally:
        remove_untrusted(root)


def _sparse(path: Path, size: int = CLAIMED, payload: bytes = b"needle", at: int = 3 << 30) -> None:
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(at)
        f.write(payload)


def _allocated(path: Path) -> int:
    return os.lstat(path).st_blocks * 512


def test_the_verifier_copy_keeps_holes_as_holes(tmp_path: Path) -> None:
    src, dst = tmp_path / "ws", tmp_path / "copy"
    src.mkdir()
    _sparse(src / "huge")
    (src / "answer.txt").write_text("42")
    assert copy_snapshot(src, dst) == []
    assert os.lstat(dst / "huge").st_size == CLAIMED
    assert _allocated(dst / "huge") <= _allocated(src / "huge") + (1 << 20)
    with open(dst / "huge", "rb") as f:  # the data around the hole is copied exactly
        f.seek((3 << 30) - 2)
        assert f.read(10) == b"\0\0needle\0\0"
    assert (dst / "answer.txt").read_text() == "42"


def test_the_copy_keeps_the_run_bit_and_drops_set_id_bits(tmp_path: Path) -> None:
    src, dst = tmp_path / "ws", tmp_path / "copy"
    src.mkdir()
    (src / "run.sh").write_text("#!/bin/sh\necho 42\n")
    os.chmod(src / "run.sh", 0o4755)
    (src / "data.txt").write_text("x")
    os.chmod(src / "data.txt", 0o2666)
    copy_snapshot(src, dst)
    assert os.stat(dst / "run.sh").st_mode & 0o7777 == 0o755
    assert os.stat(dst / "data.txt").st_mode & 0o7777 == 0o644


def test_a_dense_file_is_copied_byte_for_byte(tmp_path: Path) -> None:
    src, dst = tmp_path / "ws", tmp_path / "copy"
    src.mkdir()
    data = os.urandom(3 << 20) + b"\0" * (1 << 20) + b"tail"
    (src / "dense.bin").write_bytes(data)
    (src / "empty").write_bytes(b"")
    copy_snapshot(src, dst)
    assert (dst / "dense.bin").read_bytes() == data
    assert (dst / "empty").read_bytes() == b""


def test_the_final_state_scan_does_not_read_what_a_file_only_claims(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "small.txt").write_text("hi")
    before = scan(ws)
    _sparse(ws / "huge")
    (ws / "small.txt").write_text("changed")
    after = scan(ws, hash_budget=1 << 30)
    assert after[b"huge"][0] == "file" and after[b"huge"][2] == CLAIMED
    assert after[b"huge"][1] == ""  # not hashed: over the scan's budget, and said so below
    diff = read_workspace_diff(build_workspace_diff(ws, before, limits=DiffLimits()))
    entry = {e["path"]: e for e in diff.entries}
    assert entry["huge"]["after"] == {"type": "file", "sha256": None, "size": CLAIMED, "not_hashed": True}
    assert entry["small.txt"]["status"] == "changed" and entry["small.txt"]["after"]["sha256"]


def test_an_unhashed_file_present_before_and_after_counts_as_changed(tmp_path: Path) -> None:
    """Unknown is not 'unchanged': a file too large to digest can never be shown as untouched."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _sparse(ws / "fixture.img", size=3 << 30, at=1 << 20)  # over the default budget (2 GiB)
    before = scan(ws)
    assert before == scan(ws) and before[b"fixture.img"][1] == ""
    diff = read_workspace_diff(build_workspace_diff(ws, before))
    assert [(e["path"], e["status"]) for e in diff.entries] == [("fixture.img", "changed")]
    assert diff.entries[0]["before"]["not_hashed"] and diff.entries[0]["after"]["not_hashed"]


def test_the_budget_is_spent_in_walk_order_and_the_rest_is_marked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "big.bin").write_bytes(b"a" * 4096)
    before = scan(ws, hash_budget=1024)
    assert before[b"big.bin"] == ("file", "", 4096)
    diff = read_workspace_diff(build_workspace_diff(ws, before))
    [e] = diff.entries
    assert e["status"] == "changed" and e["before"]["not_hashed"] and e["after"]["sha256"]


def test_the_scan_never_follows_a_link_swapped_in(tmp_path: Path) -> None:
    ws, secret = tmp_path / "ws", tmp_path / "secret"
    ws.mkdir()
    secret.write_text("host secret")
    os.symlink(secret, ws / "a")
    out = scan(ws)
    assert out[b"a"] == ("symlink", str(secret), 0)


@pytest.mark.slow
def test_a_sparse_bomb_in_the_workspace_costs_the_harness_nothing(tmp_path: Path) -> None:
    """End to end: the agent answers and leaves 512 sparse files of 64 MiB each, 32 GiB claimed
    (the sandbox's file-size limit, ``file_size_mb``, stops one file from claiming more, not
    many); the trial is judged on its answer, the run finishes, and the harness wrote nothing
    near the claim (a plain copy would write 32 GiB, a plain digest read it twice)."""
    from assay.run import RunOptions, start_run

    suite = write_suite(tmp_path / "suite")
    write_task(suite, "answer", task={"category": "code", "budget": {"wall_time_s": 60},
                                      "limits": {"disk_mb": 64, "file_size_mb": 64},
                                      "predicates": [{"id": "answer", "kind": "command",
                                                      "cmd": "test \"$(cat answer.txt)\" = 42"}]})
    agents = tmp_path / "agents"
    agents.mkdir()
    agent = write_agent(agents / "sparse.yaml", "sparse", """
        for i in range(512):
            with open(f"huge{i}", "wb") as f:
                f.truncate((64 << 20) - 1)
                f.seek((i % 64) << 20)
                f.write(b"x")
        open("answer.txt", "w").write("42")
    """)
    free_before = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    out = start_run(RunOptions(suite=suite, agents=[str(agent)], out=tmp_path / "run", sandbox="bwrap",
                               max_retries=0))
    free_after = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    [r] = out.results
    assert (r.end_state.value, r.reason) == ("pass", None), (r.end_state, r.reason, r.errors)
    assert free_before - free_after < (1 << 30)  
    assert r.timings.verify_s is not None


def _nest(root: Path, depth: int, leaf: str = "f") -> None:
    """``depth`` nested folders ``a/a/…`` made through descriptors (as an agent's loop would)."""
    cur = os.open(root, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=cur)
        nxt = os.open("a", os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=cur))
    os.close(cur)


def test_deep_nesting_is_walked_without_recursion_and_the_rest_reported(tmp_path: Path) -> None:
    """1,500 nested folders made os.walk raise RecursionError in every reader of the workspace."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _nest(ws, 1500)
    (ws / "answer.txt").write_text("42")
    entries = list(walk_untrusted(ws))
    too_deep = [rel for rel, _, st in entries if st is None]
    assert too_deep == [b"/".join([b"a"] * (MAX_DEPTH + 1))]
    skipped = copy_snapshot(ws, tmp_path / "copy")
    assert skipped == ["/".join(["a"] * (MAX_DEPTH + 1))]
    assert (tmp_path / "copy" / "answer.txt").read_text() == "42"
    digests = tree_digests(ws, budget=1 << 20)
    assert digests["/".join(["a"] * (MAX_DEPTH + 1))] == UNREADABLE and digests["answer.txt"]
    assert scan(ws)[too_deep[0]] == ("unreadable", "", 0)


def test_an_unreadable_entry_is_never_unchanged(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    _nest(ws, MAX_DEPTH + 3)
    before = scan(ws)
    diff = read_workspace_diff(build_workspace_diff(ws, before))
    assert [(e["path"], e["status"], e["after"]) for e in diff.entries] == \
        [("/".join(["a"] * (MAX_DEPTH + 1)), "changed", {"type": "unreadable"})]


def test_an_unlistable_folder_is_reported_not_dropped(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root lists any folder; the permission case needs a normal user")
    ws = tmp_path / "ws"
    (ws / "locked").mkdir(parents=True)
    (ws / "locked" / "x").write_text("x")
    os.chmod(ws / "locked", 0)
    try:
        assert scan(ws)[b"locked"] == ("unreadable", "", 0)
        assert copy_snapshot(ws, tmp_path / "copy") == ["locked"]
    finally:
        os.chmod(ws / "locked", 0o755)


def test_a_path_past_path_max_is_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cur = os.open(ws, os.O_RDONLY)
    for _ in range(20):  # 20 x 250-byte names: 5,000 bytes, past PATH_MAX for a name-based open
        os.mkdir("d" * 250, dir_fd=cur)
        nxt = os.open("d" * 250, os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    os.close(cur)
    (ws / "answer.txt").write_text("42")
    assert any(st is None for _, _, st in walk_untrusted(ws))
    skipped = copy_snapshot(ws, tmp_path / "copy")
    assert len(skipped) == 1 and (tmp_path / "copy" / "answer.txt").read_text() == "42"


@pytest.mark.slow
def test_a_nesting_bomb_is_judged_on_the_answer_not_turned_into_an_infra_error(tmp_path: Path) -> None:
    """End to end: the harness's own failure would make the attempt an infra error, retried and
    kept out of the agent's record; an agent must not be able to choose that outcome."""
    from assay.run import RunOptions, start_run

    suite = write_suite(tmp_path / "suite")
    write_task(suite, "answer", task={"category": "code", "budget": {"wall_time_s": 60},
                                      "predicates": [{"id": "answer", "kind": "command",
                                                      "cmd": "test \"$(cat answer.txt)\" = 41"},
                                                     {"id": "same", "kind": "unchanged", "paths": ["**"],
                                                      "exclude": ["answer.txt"], "required": False}]})
    agents = tmp_path / "agents"
    agents.mkdir()
    agent = write_agent(agents / "nest.yaml", "nest", """
        import os
        cur = os.open(".", os.O_RDONLY)
        for _ in range(1500):
            os.mkdir("a", dir_fd=cur)
            nxt = os.open("a", os.O_RDONLY, dir_fd=cur)
            os.close(cur)
            cur = nxt
        open("answer.txt", "w").write("42")
    """)
    out = start_run(RunOptions(suite=suite, agents=[str(agent)], out=tmp_path / "run", sandbox="bwrap",
                               max_retries=1))
    [r] = out.results
    # deeper than the disk watcher measures: unknown counts as over the bound (the agent's fault)
    assert (r.end_state.value, r.reason, r.attempt) == ("fail", "resource_limit: disk", 1), (r.end_state, r.errors)
    same = next(p for p in r.predicates if p.id == "same")  # and the verifier still read it safely
    assert not same.passed and same.error is None


def test_removal_takes_any_depth_and_never_follows_a_link(tmp_path: Path) -> None:
    from assay.untrusted.tree import remove_untrusted

    ws, outside = tmp_path / "scratch", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    _nest(ws, 3000)
    os.symlink(outside, ws / "link")  # a link to a folder: removed as a link, never emptied
    (ws / "locked").mkdir()
    (ws / "locked" / "x").write_text("x")
    os.chmod(ws / "locked", 0)
    remove_untrusted(ws)
    assert not ws.exists() and not ws.is_symlink()
    assert (outside / "keep.txt").read_text() == "keep"
    link = tmp_path / "a-link"
    os.symlink(outside, link)
    remove_untrusted(link)
    assert not link.is_symlink() and (outside / "keep.txt").exists()


def test_handing_an_agent_written_tree_to_a_sandbox_uid_takes_any_depth(tmp_path: Path) -> None:
    """A sandbox rebuilt over a workspace the agent wrote chowns that tree to its identity."""
    from assay.sandbox.bwrap.hostside import own_tree

    if os.geteuid() != 0:
        pytest.skip("handing files to another uid needs root")
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    ws.mkdir()
    outside.write_text("host file")
    _nest(ws, 1500)
    (ws / "answer.txt").write_text("42")
    os.symlink(outside, ws / "link")
    own_tree(ws, 4242)  # no RecursionError
    assert os.lstat(ws / "answer.txt").st_uid == 4242 and os.lstat(ws / "a").st_uid == 4242
    assert os.lstat(ws / "link").st_uid == 4242 and os.stat(outside).st_uid == 0  # the link, never its target
