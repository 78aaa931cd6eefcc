"""``assay perf``: every scenario of a performance suite for each agent, repeated, into a
performance folder: ``perf-run.json`` (what ran) and ``perf-samples.jsonl`` (raw, one line per
repetition of a figure), which :func:`assay.score.perf.score_folder` scores."""

from __future__ import annotations

import asyncio
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

from assay.agents.base import AgentAdapter
from assay.records.perf import FigureStatus, PerfRunRecord, PerfSample
from assay.run import hostload
from assay.run.perf.apparatus import Apparatus
from assay.run.perf.scenarios import RUNNERS
from assay.sandbox.base import SandboxBackend
from assay.spec.perf import PerfSuite, Scenario

SAMPLES = "perf-samples.jsonl"
RECORD = "perf-run.json"


@dataclass
class PerfRun:
    out: Path
    samples: list[PerfSample]


async def guarded(runner: Callable[..., Awaitable[list[PerfSample]]], app: Apparatus,
                  make: Callable[[], AgentAdapter], sc: Scenario, rep: int, name: str) -> list[PerfSample]:
    """The scenario's samples; a crash of the measuring is one failed sample naming it, never the run's end."""
    try:
        return await runner(app, make, sc, rep)
    except Exception as e:  # noqa: BLE001 - recorded as the figure's failure
        return [PerfSample(agent=name, scenario=sc.id, metric="open_s", unit="s", rep=rep,
                           status=FigureStatus.failed, reason=f"the measuring failed: {type(e).__name__}: {e}"[:500])]


def repetitions(scenario: int | None, asked: int | None, suite: int) -> int:
    """A scenario's own ``repeat`` (a cap for a costly one) unless fewer are asked; else the asked, else the suite's."""
    if scenario is not None:
        return min(scenario, asked) if asked else scenario
    return asked or suite


def host_facts() -> dict[str, object]:
    return {"cpus": hostload.cpus(), "machine": platform.machine(), "kernel": platform.release(),
            "python": platform.python_version(), "pid": os.getpid()}


async def run_perf_async(suite: PerfSuite, agents: dict[str, Callable[[], AgentAdapter]], backend: SandboxBackend,
                         out: Path, *, repeat: int | None = None, progress: Callable[[str], None] = lambda s: None,
                         only: set[str] | None = None) -> PerfRun:
    out.mkdir(parents=True, exist_ok=True)
    app = Apparatus(backend, out / "scratch", timeout_s=suite.timeout_s)
    app.start()
    samples: list[PerfSample] = []
    record = PerfRunRecord(suite=suite.name, repeat=repeat or suite.repeat,
                           agents={name: make().info().version for name, make in agents.items()},
                           kinds={sc.id: sc.kind.value for sc in suite.scenarios}, host=host_facts())
    (out / RECORD).write_text(record.model_dump_json(indent=1))
    try:
        with open(out / SAMPLES, "a", encoding="utf-8") as f:
            for name, make in agents.items():
                for sc in suite.scenarios:
                    if only and sc.id not in only:
                        continue
                    for rep in range(repetitions(sc.repeat, repeat, suite.repeat)):
                        progress(f"{name} {sc.id} rep {rep + 1}")
                        got = await guarded(RUNNERS[sc.kind], app, make, sc, rep, name)
                        for s in got:
                            f.write(s.model_dump_json() + "\n")
                        f.flush()
                        samples += got
    finally:
        app.stop()
    return PerfRun(out, samples)


def run_perf(suite: PerfSuite, agents: dict[str, Callable[[], AgentAdapter]], backend: SandboxBackend, out: Path,
             **kw: object) -> PerfRun:
    return asyncio.run(run_perf_async(suite, agents, backend, out, **kw))  # type: ignore[arg-type]
