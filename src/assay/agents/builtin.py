"""The two agents every suite is validated with: ``oracle`` (runs the task's reference
solution) and ``nop`` (does nothing). A task that nop passes is invalid (law 7)."""

from __future__ import annotations

import assay
from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome, ConversationTurn
from assay.sandbox.base import Mount
from assay.spec.load import LoadedTask
from assay.spec.task_env import interpreter

SOLUTION_MOUNT = "/assay/solution"


class NopAgent(AgentAdapter):
    """Does nothing and exits 0: the floor every verifier must reject."""

    name = "nop"
    kind = "nop"
    session_mechanism = "none: reads nothing, in any turn"
    seeds_history = True

    def info(self) -> AgentInfo:
        return AgentInfo(self.name, self.kind, assay.__version__)

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        return AgentOutcome(exit_code=0, final_output="")

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        return await self.run(ctx)


class OracleAgent(AgentAdapter):
    """Runs the task's reference solution script in the workspace, inside the sandbox."""

    name = "oracle"
    kind = "oracle"
    session_mechanism = "none: turn 1 runs the reference solution, turn N runs solution/turnN.sh if present"
    seeds_history = True

    def info(self) -> AgentInfo:
        return AgentInfo(self.name, self.kind, assay.__version__)

    def unsupported_reason(self, task: LoadedTask) -> str | None:
        sol = task.path(task.spec.solution)
        if sol is None or not sol.is_file():
            return "no_reference_solution"
        return None

    def mounts(self, task: LoadedTask) -> list[Mount]:
        sol = task.path(task.spec.solution)
        assert sol is not None
        also = task.spec.solution_dir  # the path the solution names itself by (Harbor's /solution)
        return [Mount(source=sol.parent, target=t) for t in (SOLUTION_MOUNT, *([also] if also else []))]

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        sol = ctx.task.path(ctx.task.spec.solution)
        assert sol is not None
        return await self._script(ctx, sol.name)

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """Turn 1: the reference solution; turn N: ``turnN.sh`` beside it, when the task has one."""
        if turn.number == 1:
            return await self.run(ctx)
        sol = ctx.task.path(ctx.task.spec.solution)
        assert sol is not None
        script = f"turn{turn.number}.sh"
        if not (sol.parent / script).is_file():
            return AgentOutcome(exit_code=0, final_output="")
        return await self._script(ctx, script)

    async def run_step(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """A step of a multi-step task: the same scripts as turns (step N's is ``turnN.sh``)."""
        return await self.run_turn(ctx, turn)

    async def _script(self, ctx: AgentContext, name: str) -> AgentOutcome:
        inside = ctx.mounts[SOLUTION_MOUNT]
        sol = ctx.task.path(ctx.task.spec.solution)
        assert sol is not None
        env = {**ctx.env, **ctx.task.spec.env.solution, "ASSAY_WORKSPACE": ctx.sandbox.workspace_path,
               "ASSAY_SOLUTION_DIR": inside}
        argv = [*interpreter(sol.parent / name), f"{inside}/{name}"]  # by its #! line, else /bin/sh
        res = await ctx.sandbox.exec(argv, env=env, timeout_s=ctx.timeout_s)
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=res.stdout,
                            stderr=res.stderr, limits_exceeded=res.limits_exceeded)
