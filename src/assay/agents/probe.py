"""The exposure probe as an agent: it stands in for another agent, in that agent's real sandbox.

``assay validate --exposure`` runs one :class:`ProbeAgent` per agent kind. It has the wrapped
agent's extra mounts and limits, receives the same prompt, wiring and environment, and instead of
working it runs :mod:`assay.agents.exposure_probe` inside the sandbox, which lists every path,
variable and mount an agent there could read. The harness then holds that list against the
task's private files (:mod:`assay.run.exposure`). The probe's report is written by code that ran
in the sandbox, so it is read as untrusted JSON, within a byte bound.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import assay
from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome, ConversationTurn
from assay.harness.wiring import WorldToolContract
from assay.sandbox.base import Mount
from assay.sandbox.bwrap.rootfs import MERGED_USR, SYSTEM_DIRS, python_roots
from assay.spec.budget import Limits
from assay.spec.load import LoadedTask
from assay.untrusted.json_text import loads as untrusted_loads

PROBE = Path(__file__).with_name("exposure_probe.py")
REPORT_FILE = ".assay-exposure.json"
#: the most of a probe report the harness reads
REPORT_MAX_BYTES = 64 << 20


@dataclass
class ProbeSighting:
    """What one probe saw in one attempt's sandbox, with what the harness knows of that sandbox."""

    task_id: str
    variant: str
    agent: str
    report: dict[str, Any] | None
    error: str | None = None
    #: mount targets whose contents the agent may legitimately read (the oracle's solution)
    allowed_targets: tuple[str, ...] = ()
    #: host paths the harness vouched for (bound read-only, not walked by the probe)
    vouched: tuple[Path, ...] = ()
    scratch: Path | None = None  # the attempt's own scratch (its workspace, home and staged copies)


class ProbeAgent(AgentAdapter):
    """Runs the exposure probe under ``inner``'s mounts, limits and session abilities; what it
    saw is kept in :attr:`sightings` (the audit runs in the same process)."""

    def __init__(self, inner: AgentAdapter, allowed_targets: tuple[str, ...] = ()):
        super().__init__({})
        self.inner = inner
        self.allowed_targets = allowed_targets
        self.sightings: list[ProbeSighting] = []
        self.name = f"probe-{inner.name}"
        self.kind = "probe"
        self.session_mechanism = self.inner.session_mechanism or "none: the probe runs in turn 1"
        self.seeds_history = True

    def info(self) -> AgentInfo:
        inner = self.inner.info()
        return AgentInfo(self.name, "probe", assay.__version__, inner.usable, inner.detail,
                         {"stands_in_for": self.inner.name})

    def unsupported_with(self, task: LoadedTask, world_tools: WorldToolContract | None) -> str | None:
        """Where the real agent would never run, it sees nothing: the probe is skipped too."""
        return self.inner.unsupported_with(task, world_tools)

    def limits(self, limits: Limits, task: LoadedTask | None = None) -> Limits:
        return self.inner.limits(limits, task)

    def mounts(self, task: LoadedTask) -> list[Mount]:
        return self.inner.mounts(task)

    def vouched(self, task: LoadedTask) -> tuple[Path, ...]:
        """Host paths bound into every such sandbox that the probe need not walk: the system, the
        Python install and the agent's own install folders (checked by path by the audit)."""
        system = [Path(d) for d in (*SYSTEM_DIRS, *MERGED_USR) if Path(d).exists()]
        installs = [Path(m.source) for m in self.inner.mounts(task) if str(m.source) == m.target]
        return tuple(dict.fromkeys([*system, *python_roots(), *installs]))

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        vouched = self.vouched(ctx.task)
        args = {"out": f"{ctx.home_inside}/{REPORT_FILE}", "workspace": ctx.sandbox.workspace_path,
                "skip": [str(p) for p in vouched]}
        res = await ctx.sandbox.exec([sys.executable, "-I", str(PROBE), json.dumps(args)], env=dict(ctx.env),
                                     timeout_s=ctx.timeout_s)
        report, error = None, None
        out = ctx.home / REPORT_FILE
        try:
            if out.is_symlink() or not out.is_file():
                raise OSError("no report written")
            if out.stat().st_size > REPORT_MAX_BYTES:
                raise OSError(f"report over {REPORT_MAX_BYTES} bytes")
            report = untrusted_loads(out.read_bytes())
            out.unlink()
        except (OSError, ValueError) as e:
            error = f"probe exited {res.exit_code}: {e}: {res.stderr.decode(errors='replace')[-500:]}"
        allowed = self.allowed_targets  # the oracle's solution, also where the task names it (solution_dir)
        if allowed and ctx.task.spec.solution_dir:
            allowed = (*allowed, ctx.task.spec.solution_dir)
        self.sightings.append(ProbeSighting(ctx.task.id, ctx.variant, self.name, report, error,
                                            allowed, vouched, ctx.attempt_dir.parent))
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=b"", stderr=res.stderr[-4000:])

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        if turn.number == 1:
            return await self.run(ctx)
        return AgentOutcome(exit_code=0, final_output="")
