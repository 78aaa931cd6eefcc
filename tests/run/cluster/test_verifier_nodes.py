"""Verifier nodes of their own identity: on a cluster with a node that advertises
``assay_verifier``, every attempt's final state is shipped there and verified there, with the
same verdicts, predicates and digests as a local run's."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from assay.store.integrity import verify_run
from tests.run.cluster.cluster import LocalRayCluster, can_make_read_only
from tests.run.cluster.test_ray_executor import STARTER, assay, comparable, results

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def vcluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRayCluster]:
    root = tmp_path_factory.mktemp("rayv")
    (root / "runs").mkdir()
    c = LocalRayCluster(root / "nodes", read_only=(root / "runs",) if can_make_read_only() else ())
    try:
        c.start_head_and_wait()
        c.add_worker(2)
        c.add_verifier(2)
        c.wait_nodes(3)
        yield c
    finally:
        c.stop()


def test_attempts_are_verified_on_the_verifier_node_with_local_verdicts(vcluster: LocalRayCluster,
                                                                          tmp_path: Path) -> None:
    local, remote = tmp_path / "local", vcluster.root.parent / "runs" / "verified-elsewhere"
    common = ["--agent", "oracle,nop", "--seed", "3", "-q"]
    a = assay("run", str(STARTER), *common, "--out", str(local), cwd=tmp_path)
    b = assay("run", str(STARTER), *common, "-j", "2", "--executor", "ray", "--address", vcluster.address,
              "--out", str(remote), cwd=tmp_path)
    assert a.returncode == b.returncode, (a.stderr[-2000:], b.stderr[-2000:])
    ra, rb = results(local), results(remote)
    assert len(ra) == 30 and sorted(ra) == sorted(rb)
    verifier, worker = vcluster.node_id("v1"), vcluster.node_id("w1")
    for key in ra:
        assert rb[key]["sandbox"]["node_id"] == worker
        assert rb[key]["sandbox"]["verifier_node_id"] == verifier, key  # verified there, not on the worker
        other = comparable(rb[key])
        other["sandbox"].pop("verifier_node_id")
        assert comparable(ra[key]) == other, key
    assert {r["end_state"] for r in rb.values()} == {"pass", "fail"}
    assert verify_run(remote).ok
    leftovers = list((vcluster.root / "v1" / "tmp").glob("assay-verifier-*/*"))
    assert leftovers == [], leftovers  # each verification's folder is gone once it answered
