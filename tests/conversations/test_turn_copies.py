"""A conversation keeps a copy of the workspace after every turn, on the host, until the verifier
has read it. An agent that fills its workspace to the disk bound before every turn would make
the harness keep turns × the bound. The copies of one attempt stay within a budget (twice the
disk bound); a turn whose state would pass it is not kept, and its predicates fail (unknown is
failure: a `file_absent` over a state never kept must not hold)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from assay.conversations import state as turn_state
from assay.conversations.loop import ConversationLog
from assay.conversations.verify import verify_turns
from assay.sandbox.host import HostBackend
from assay.spec import load_task
from assay.records.verifier_inputs import VerifierInputs
from tests.conftest import write_suite, write_task

MIB = 1 << 20


def _fill(workspace: Path, name: str, mib: int) -> None:
    (workspace / name).write_bytes(b"\x01" * (mib * MIB))  # real data: allocated, not a sparse claim


def test_turn_copies_stay_within_their_budget_and_a_turn_not_kept_fails_closed(tmp_path: Path) -> None:
    ws, scratch = tmp_path / "ws", tmp_path / "scratch"
    ws.mkdir()
    budget = 5 * MIB
    _fill(ws, "a.bin", 3)
    first = asyncio.run(turn_state.take(1, ws, scratch, [], budget_bytes=budget))
    assert first.not_kept is None and (first.work / "a.bin").stat().st_size == 3 * MIB
    _fill(ws, "b.bin", 1)  # 4 MiB now: 3 + 4 > 5
    second = asyncio.run(turn_state.take(2, ws, scratch, [], budget_bytes=budget))
    assert second.not_kept is not None and "budget" in second.not_kept
    assert not any(second.work.iterdir())  # nothing copied

    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "conv", task={"category": "c", "predicates": [{"id": "final", "kind": "file_exists",
                                                                          "path": "a.bin"}],
                                        "conversation": {"turns": [
                                            {"predicates": [{"id": "t1", "kind": "file_exists", "path": "a.bin"}]},
                                            {"user": "more", "predicates": [
                                                {"id": "t2-absent", "kind": "file_absent", "path": "c.bin"}]}]}})
    task = load_task(d)
    log = ConversationLog()
    log.states.extend([first, second])
    log.ended_by = "turns_done"
    results = asyncio.run(verify_turns(task, log, tmp_path / "verify", initial_digests={}, events=[],
                                       backend=HostBackend(), limits=task.spec.limits or __import__(
                                           "assay.spec.budget", fromlist=["Limits"]).Limits(), extra=VerifierInputs()))
    by = {r.id: r for r in results}
    assert by["t1"].passed
    assert not by["t2-absent"].passed and "state_not_kept" in by["t2-absent"].evidence
