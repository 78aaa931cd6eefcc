"""One real local Ray cluster for the module's tests: a head and two worker nodes, separate
processes with their own working and temp folders; the runs folder is read-only to the workers."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

pytest.importorskip("ray")

from tests.run.cluster.cluster import LocalRayCluster, can_make_read_only  # noqa: E402


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRayCluster]:
    root = tmp_path_factory.mktemp("ray")
    runs = root / "runs"
    runs.mkdir()
    c = LocalRayCluster(root / "nodes", read_only=(runs,) if can_make_read_only() else ())
    try:
        c.start(workers=2, slots=2)
        yield c
    finally:
        c.stop()


@pytest.fixture
def runs(cluster: LocalRayCluster) -> Path:
    return cluster.root.parent / "runs"
