"""The conversation loop of one attempt: user turn, agent turn (continuing its own session), the
state kept, the next user turn chosen from what the agent really did; until the conversation ends
on its goal, a stop word, its turn limit, a budget, an off-script agent or a failed turn.

Each turn's agent events are written to the trace as the turn ends, so the trace reads in the
order things happened and a per-turn predicate sees exactly the events up to its turn.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from assay.agents.base import AgentAdapter, AgentContext, AgentOutcome, ConversationTurn, SessionLost
from assay.agents.history import trace_events
from assay.conversations.script import TurnFacts, UserLine, scripted_line, stop_word
from assay.conversations.state import TurnState, executed_since
from assay.errors import AdapterError
from assay.records.results import UsageTotals
from assay.spec.conversation import ConversationSpec
from assay.trace.events import EventKind, Source
from assay.trace.turns import ANSWER_CHARS

#: called after each turn with its number: the state to keep for the verifier
Checkpoint = Callable[[int], Awaitable[TurnState]]


class Simulator(Protocol):
    """A model-driven user: the next message given the conversation so far (None: it has none)."""

    async def next_line(self, transcript: list[dict[str, str]]) -> UserLine: ...


@dataclass
class ConversationLog:
    """How the conversation went: the turns that ran and why it ended."""

    turns: list[dict[str, Any]] = field(default_factory=list)
    states: list[TurnState] = field(default_factory=list)
    ended_by: str = ""
    detail: str = ""

    def record(self) -> dict[str, Any]:
        return {"turns": self.turns, "ended_by": self.ended_by, "detail": self.detail,
                "turns_run": len(self.turns)}


def session_id(ctx: AgentContext) -> str:
    """One stable session id per attempt (UUID-shaped: some agents accept nothing else)."""
    h = hashlib.sha256(f"{ctx.attempt_dir}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


async def run_conversation(agent: AgentAdapter, ctx: AgentContext, conv: ConversationSpec, checkpoint: Checkpoint,
                           log: ConversationLog, simulator: Simulator | None = None,
                           spent: Callable[[], object] = lambda: None) -> AgentOutcome:
    """Run the live turns; returns the outcome of the whole conversation (its events already in
    the trace). ``log`` is filled as it goes, so a failure mid-way still leaves what ran.
    ``spent()`` names the attempt's budget that is spent, if one is (the harness's meter)."""
    trace, sid = ctx.trace, session_id(ctx)
    for ev in trace_events(conv.history):
        trace.emit(Source.harness, EventKind.log, ev)
    deadline = time.monotonic() + ctx.timeout_s
    previous: TurnFacts | None = None
    transcript: list[dict[str, str]] = []
    outcomes: list[AgentOutcome] = []
    calls_seen = 0
    for n in range(1, conv.turn_limit + 1):
        line = await _next_line(conv, n, previous, simulator, transcript, ctx.prompt)
        if line.text is None:
            log.ended_by = line.end
            log.detail = {"off_script": f"turn {n}: no scripted reply fits what the agent did",
                          "goal": f"turn {n}: the simulated user is done",
                          "budget": f"turn {n}: the simulated user's calls are spent"}.get(line.end, line.end)
            break
        if (word := stop_word(conv, line.text)) is not None:
            log.ended_by, log.detail = "stop_word", f"turn {n}: the user said {word!r}"
            break
        left = deadline - time.monotonic()
        if left <= 0:
            log.ended_by, log.detail = "budget", f"wall time spent before turn {n}"
            break
        trace.emit(Source.harness, EventKind.user_message, {"text": line.text, "turn": n, "by": line.by,
                                                            "rule": line.rule})
        transcript.append({"role": "user", "content": line.text})
        turn = ConversationTurn(number=n, session_id=sid, history=tuple(conv.history) if n == 1 else ())
        try:
            step = dataclasses.replace(ctx, prompt=line.text, timeout_s=left, turn=turn)
            out = await (agent.run_step(step, turn) if conv.fresh_sessions else agent.run_turn(step, turn))
        except SessionLost as e:
            log.ended_by, log.detail = "session_lost", str(e)
            if e.outcome is not None:  # the turn ran: its evidence stays
                _emit_turn(trace, n, e.outcome)
                trace.emit(Source.agent, EventKind.process_output, {
                    "turn": n, "exit_code": e.outcome.exit_code, "timed_out": e.outcome.timed_out,
                    "stdout_tail": e.outcome.stdout.decode(errors="replace")[-2000:],
                    "stderr_tail": e.outcome.stderr.decode(errors="replace")[-2000:]})
            trace.emit(Source.harness, EventKind.error, {"reason": "session_lost", "turn": n, "message": str(e)})
            raise AdapterError(f"{agent.name} lost its session at turn {n}: {e}", reason="session_lost") from e
        outcomes.append(out)
        _emit_turn(trace, n, out)
        state = await checkpoint(n)
        executed, calls_seen = executed_since(state.extra, calls_seen)
        answer = turn_text(out)
        previous = TurnFacts(n, tuple(executed), answer or "", out.timed_out, out.exit_code)
        transcript.append({"role": "assistant", "content": answer or ""})
        ended = trace.emit(Source.harness, EventKind.log, {
            "event": "turn_ended", "turn": n, "exit_code": out.exit_code, "timed_out": out.timed_out,
            "executed": executed, "final_text": None if answer is None else answer[-ANSWER_CHARS:]})
        log.states.append(dataclasses.replace(state, end_seq=ended.seq))
        log.turns.append({"turn": n, "by": line.by, "rule": line.rule, "executed": executed,
                          "exit_code": out.exit_code, "timed_out": out.timed_out})
        if out.timed_out:
            log.ended_by, log.detail = "budget", f"turn {n} ran out of wall time"
            break
        if (budget := spent()) is not None:
            log.ended_by, log.detail = "budget", f"turn {n}: the {budget} budget of the attempt is spent"
            break
        if conv.goal is not None and conv.goal in executed:
            log.ended_by, log.detail = "goal", f"turn {n}: {conv.goal} executed"
            break
    else:
        log.ended_by = "turn_limit" if conv.simulator is not None else "turns_done"
        log.detail = f"{conv.turn_limit} turn(s)"
    trace.emit(Source.harness, EventKind.log, {"event": "conversation_ended", **log.record()})
    return combined(outcomes, log)


def turn_text(out: AgentOutcome) -> str | None:
    """The agent's answer of one turn: its final output, else the last final answer its session
    recorded (an adapter whose engine does not report one); None when the turn gave none."""
    if out.final_output is not None:
        return out.final_output
    texts = [str(ev.data.get("text", "")) for ev in out.events or () if ev.kind is EventKind.final_output]
    return texts[-1] if texts else None


def _emit_turn(trace: Any, n: int, out: AgentOutcome) -> None:
    """The turn's agent events (the adapter read them from its session once), and what went
    wrong reading them."""
    for ev in out.events or ():
        trace.emit(Source.agent, ev.kind, ev.data, ts=ev.ts)
    for m in out.errors:
        trace.emit(Source.harness, EventKind.error, {"reason": "normalize", "turn": n, "message": m})


async def _next_line(conv: ConversationSpec, n: int, previous: TurnFacts | None, simulator: Simulator | None,
                     transcript: list[dict[str, str]], prompt: str) -> UserLine:
    if n == 1 and (not conv.turns or conv.turns[0].user is None):
        return UserLine(prompt, "script")
    if n <= len(conv.turns):
        return scripted_line(conv.turns[n - 1], previous)
    if simulator is None:
        return UserLine(None, "simulator")
    return await simulator.next_line(transcript)


def combined(outcomes: list[AgentOutcome], log: ConversationLog) -> AgentOutcome:
    """One outcome for the whole conversation: the last turn's exit and answer, every turn's
    usage and files; events are already in the trace (``events=()``)."""
    if not outcomes:
        return AgentOutcome(exit_code=None, events=(), extra={"conversation": log.record()})
    last = outcomes[-1]
    usage = None
    if any(o.usage for o in outcomes):
        usage = UsageTotals(**{f: sum(getattr(o.usage, f) for o in outcomes if o.usage)
                               for f in ("model_calls", "input_tokens", "output_tokens", "cached_tokens", "cost_usd",
                                         "tool_calls", "turns")})
    native: dict[str, Any] = {}
    for o in outcomes:
        native.update(o.native_files)
    limits = tuple(dict.fromkeys(x for o in outcomes for x in o.limits_exceeded))
    return AgentOutcome(exit_code=last.exit_code, timed_out=any(o.timed_out for o in outcomes), stdout=last.stdout,
                        stderr=last.stderr, final_output=last.final_output, usage=usage, native_files=native,
                        limits_exceeded=limits, extra={**last.extra, "conversation": log.record()}, events=())
