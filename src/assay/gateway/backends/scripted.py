"""The scripted backend: deterministic answers from the task's ``model.yaml``.

The turn to answer is chosen from the conversation itself (how many assistant turns it already
holds), never from a counter of calls: an agent that retries, probes, makes a side request or
injects its own user messages between turns still gets the turn its conversation is at.
"""

from __future__ import annotations

from assay.errors import AssayError, UsageError
from assay.gateway.backends.base import BackendSession, ModelBackend
from assay.gateway.neutral import ModelReply, ModelRequest, ToolCall, count_usage
from assay.gateway.script import ModelScript, ScriptTurn, load_script
from assay.gateway.toolmap import render_call
from assay.harness.services import AttemptHandle
from assay.records.manifest import GatewayRecord
from assay.spec.load import LoadedSuite, LoadedTask

MODEL_ID = "assay-scripted"


class ScriptedSession(BackendSession):
    def __init__(self, script: ModelScript | None, problem: str | None = None, model: str = MODEL_ID,
                 steps: tuple[str, ...] = ()):
        self.script = script
        self.problem = problem
        self.model = model
        self.steps = steps  # each step's message, for a script with `steps:`

    def _turns(self, req: ModelRequest) -> tuple[list[ScriptTurn] | None, str | None]:
        """The script's turns for this request: its one list, or the step whose message the
        request's first user message holds (a fresh session per step restarts the turn count)."""
        assert self.script is not None
        if not self.script.steps:
            return self.script.turns, None
        first = next((m.text for m in req.messages if m.role == "user"), "")
        held = [i for i, text in enumerate(self.steps) if text.strip() and text.strip() in first]
        if not held:
            return None, "no step's message is in the request's first user message"
        i = max(held, key=lambda k: len(self.steps[k].strip()))  # the most specific, if one holds another
        if i >= len(self.script.steps):
            return None, f"step {i + 1} has no turns in the script (it has {len(self.script.steps)} step(s))"
        return self.script.steps[i], None

    def _reply(self, req: ModelRequest, text: str, calls: tuple[ToolCall, ...] = (), **extra: object) -> ModelReply:
        draft = ModelReply(text=text, tool_calls=calls, finish_reason="tool_calls" if calls else "stop", model=self.model,
                           extra={k: v for k, v in extra.items() if v is not None})
        return ModelReply(**{**draft.__dict__, "usage": count_usage(req, draft)})

    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        if self.script is None:
            return self._reply(req, f"(scripted backend: {self.problem})", error=self.problem)
        turns, why = self._turns(req)
        if turns is None:
            return self._reply(req, f"(scripted backend: {why})", error=why)
        idx = req.assistant_turns()
        if idx >= len(turns):
            return self._reply(req, self.script.final_text, turn=idx, past_script=True)
        turn = turns[idx]
        if turn.tool_calls and not req.tools:
            # a side request (e.g. a session-title call) offers no tools: answer text, advance nothing
            return self._reply(req, turn.text or "OK", turn=idx, note="no tools offered; answered text only")
        calls = []
        for j, c in enumerate(turn.tool_calls):
            rendered = render_call(c.name, c.arguments, req.tools)
            if rendered is None:
                problem = (f"scripted turn {idx + 1} calls tool {c.name!r}, which the agent does not offer "
                           f"(offered: {req.tool_names()})")
                return self._reply(req, f"(scripted backend: {problem})", turn=idx, error=problem)
            calls.append(ToolCall(f"call_{idx}_{j}", rendered[0], rendered[1]))
        return self._reply(req, turn.text, tuple(calls), turn=idx)


def step_messages(task: LoadedTask) -> tuple[str, ...]:
    """Each step's message of a ``fresh_sessions`` task (step 1's is the task's prompt), else ()."""
    conv = task.spec.conversation
    if conv is None or not conv.fresh_sessions:
        return ()
    return tuple(task.prompt if i == 0 and t.user is None else (t.user or "") for i, t in enumerate(conv.turns))


class ScriptedBackend(ModelBackend):
    name = "scripted"

    @classmethod
    def record_from_cli(cls, value: str, suite: LoadedSuite) -> GatewayRecord:
        from assay.gateway.config import scripted_record

        base, _, model_id = value.partition("#")
        if base != "scripted":
            raise UsageError(f"--model {value!r}: scripted takes no ':' argument (fix: --model scripted[#MODEL_ID])")
        return scripted_record(model_id or None, suite)

    def model_id(self) -> str:
        return self.record.model or MODEL_ID

    def open(self, handle: AttemptHandle | None) -> BackendSession:
        path = self.record.settings.get("script")
        if handle is not None and handle.task.spec.model_script:
            path = str(handle.task.dir / handle.task.spec.model_script)
        if path is None:
            task = handle.task.id if handle else "?"
            return ScriptedSession(None, f"task {task!r} has no model_script", self.model_id())
        try:
            from pathlib import Path

            return ScriptedSession(load_script(Path(path)), model=self.model_id(),
                                   steps=step_messages(handle.task) if handle is not None else ())
        except AssayError as e:
            return ScriptedSession(None, str(e), self.model_id())


