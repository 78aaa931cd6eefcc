"""A node worker is a Ray worker process: dozens of threads (gRPC, the core worker's loops).
Forking such a process and running harness code in the child before ``exec`` (``preexec_fn``)
can deadlock the child on a lock another thread held at the fork; the parent then waits in
``Popen`` for an exec that never comes. That was the 3-node hang of docs/scale.md. An attempt
on a node must start every process by vfork/exec alone: checked here on a real attempt (real
sandbox and verifier) run by the node worker code, in a process given many busy threads."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.run import RunOptions, start_run
from assay.run.cluster.worker import NodeWorker
from assay.sandbox.registry import get_backend
from tests.run.cluster.test_ray_executor import slow_suite


async def test_an_attempt_on_a_node_starts_no_process_by_fork_with_harness_code(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if not get_backend("bwrap").status().usable:
        pytest.skip("bubblewrap is not usable here")
    suite, agent = slow_suite(tmp_path, 0)
    done = await asyncio.to_thread(start_run, RunOptions(suite=suite, agents=[str(agent)], out=tmp_path / "run",
                                                         sandbox="bwrap"))
    manifest = done.manifest
    spawned: list[tuple[Any, Any]] = []
    real = subprocess.Popen.__init__

    def spy(self: subprocess.Popen[bytes], *args: Any, **kwargs: Any) -> None:
        spawned.append((args[0] if args else kwargs.get("args"), kwargs.get("preexec_fn")))
        real(self, *args, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", spy)
    stop = threading.Event()
    busy = [threading.Thread(target=lambda: [None for _ in iter(lambda: stop.wait(0.001), True)], daemon=True)
            for _ in range(16)]  # a threaded process, as a Ray worker is
    for t in busy:
        t.start()
    try:
        worker = NodeWorker(manifest.model_dump_json(), None, [], {}, "node-x", root=tmp_path / "node")  # type: ignore[arg-type]
        fin = await worker.run(manifest.plan.trials[0], 2, None)
    finally:
        stop.set()
        for t in busy:
            t.join(10)
    assert fin.result.attempt == 2 and fin.result.end_state.value == "pass", fin.result.errors
    assert spawned, "the attempt started no process: the check compared nothing"
    assert [argv for argv, pre in spawned if pre is not None] == []
