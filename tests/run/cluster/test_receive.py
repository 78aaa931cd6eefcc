"""What the head accepts from a worker: data about the attempt it was asked for, nothing more.
A worker is a remote process; its answer is checked before a byte reaches the run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import RunDirError
from assay.run.cluster.executor import NodePool, Node, sandbox_nodes, store_trial_files


def test_files_outside_the_trial_folder_are_refused(tmp_path: Path) -> None:
    trial = tmp_path / "run" / "trials" / "t"
    trial.mkdir(parents=True)
    (tmp_path / "run" / "manifest.json").write_text("{}")
    for rel in ("../../manifest.json", "/etc/passwd", "attempts/../../x"):
        with pytest.raises(RunDirError, match="outside its trial folder"):
            store_trial_files(trial, {rel: b"evil"})
    assert (tmp_path / "run" / "manifest.json").read_text() == "{}"
    (trial / "link").symlink_to(tmp_path / "run")
    with pytest.raises(RunDirError):
        store_trial_files(trial, {"link/manifest.json": b"evil"})  # through a link out of the folder
    assert (tmp_path / "run" / "manifest.json").read_text() == "{}"


def test_trial_files_are_written_once_and_updated_only_when_changed(tmp_path: Path) -> None:
    trial = tmp_path / "t"
    store_trial_files(trial, {"attempts/1/gateway.session.jsonl": b"a", "approvals.sqlite": b"v1"})
    assert (trial / "attempts/1/gateway.session.jsonl").read_bytes() == b"a"
    store_trial_files(trial, {"approvals.sqlite": b"v2"})  # a store the services keep across attempts
    assert (trial / "approvals.sqlite").read_bytes() == b"v2"
    assert not list(trial.rglob(".tmp-*"))


def test_sandbox_nodes_prefer_the_advertised_resource() -> None:
    nodes = [{"NodeID": "h", "Alive": True, "Resources": {"CPU": 4.0}},
             {"NodeID": "a", "Alive": True, "Resources": {"CPU": 2.0, "assay_sandbox": 3.0}},
             {"NodeID": "b", "Alive": False, "Resources": {"assay_sandbox": 2.0}}]
    assert [(n.id, n.slots) for n in sandbox_nodes(nodes)] == [("a", 3)]
    assert [(n.id, n.slots) for n in sandbox_nodes(nodes[:1])] == [("h", 4)]


async def test_pool_retries_elsewhere_and_stops_when_no_node_is_left() -> None:
    a, b = Node("a", 1), Node("b", 1)
    pool = NodePool([a, b])
    first = await pool.acquire(set())
    assert first is a
    await pool.release(first, lost=True)  # a died under its attempt
    again = await pool.acquire({"a"})
    assert again is b
    await pool.release(again, lost=True)
    with pytest.raises(RunDirError, match="every sandbox node"):
        await pool.acquire({"a", "b"})


async def test_a_hung_node_gets_no_new_attempt_and_is_remembered() -> None:
    a, b = Node("a", 2), Node("b", 1)
    pool = NodePool([a, b])
    first = await pool.acquire(set())
    await pool.release(first, hung=True)  # its worker did not answer in time
    assert (first.alive, first.hung) == (False, True)
    other = await pool.acquire(set())
    assert other is not first and other.alive
