"""A hostile agent's sparse file: ``truncate -s 256G`` costs the agent no disk at all, so the
sandbox's disk bound (blocks written) never sees it. The harness reads that workspace after the
agent: the verifier's copy and the final-state scan must cost what the file really holds, not
what it claims to hold (a plain copy would write 256 GiB of zeros to the host, a plain digest
would read them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.store.workspace_diff import DiffLimits, build_workspace_diff, read_workspace_diff, scan
from assay.verify.snapshot import copy_snapshot
from tests.conftest import write_agent, write_suite, write_task

CLAIMED = 256 << 30  # 256 GiB apparent, a few KiB real


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
    agent = write_agent(agents / "sparse.yaml", "sparse", f"""
        for i in range(512):
            with open(f"huge{{i}}", "wb") as f:
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
