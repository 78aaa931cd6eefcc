"""One attempt's gateway session: key, budget, faults, accounting, trace and recording.

Everything about one model call that is not the wire format or the backend happens here, in
this order: count the call, record the request, refuse past a budget, inject the planned
fault, ask the backend, account tokens/latency/cost, record the response, render the answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from assay.gateway.accounting import Tally, call_cost
from assay.gateway.answer import Answer
from assay.gateway.backends.base import BackendSession
from assay.gateway.errors import BUDGET_HEADER, WireError
from assay.gateway.faults import FaultPlan, describe
from assay.gateway.neutral import ModelReply, ModelRequest, count_usage
from assay.gateway.relay import open_stream
from assay.gateway.wire.base import Wire
from assay.harness.budget import BudgetMeter, Refusal
from assay.harness.evidence import is_world_call
from assay.harness.wiring import WorldToolContract
from assay.run_budget.meter import RunRefusal
from assay.spec.budget import Budget, BudgetName
from assay.spec.faults import FaultKind
from assay.trace.events import EventKind, Source
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter

RECORDING_NAME = "gateway.session.jsonl"


def passes_through(backend: BackendSession) -> bool:
    """Whether the backend really streams (its answer is not known before the first byte). A
    complete backend (scripted, replay, local) answers whole, so its streamed answer is known,
    accounted and charged before anything is sent: a budget refusal is then an HTTP 400, not a
    refusal in the middle of a stream (which agents such as Hermes retry)."""
    return type(backend).stream is not BackendSession.stream


def fingerprint(req: ModelRequest) -> dict[str, Any]:
    """What a replayed request must match: the tools offered and every earlier assistant turn."""
    turns = [{"text": m.text, "calls": [[c.name, c.arguments] for c in m.tool_calls]}
             for m in req.messages if m.role == "assistant"]
    return {"tools": sorted(req.tool_names()), "assistant_turns": turns}


class GatewaySession:
    """Serves the model calls of one attempt (or of a standalone gateway)."""

    def __init__(self, key: str, backend: BackendSession, *, model: str, budget: Budget | None = None,
                 faults: FaultPlan | None = None, prices: dict[str, Any] | None = None,
                 trace: TraceWriter | None = None, redactor: Redactor | None = None, recording: Path | None = None,
                 meter: BudgetMeter | None = None, world_tools: WorldToolContract | None = None,
                 provider: str | None = None):
        self.key = key
        self.provider = provider  # who answers (recorded with each reply: the trace's gen_ai.provider.name)
        self.backend = backend
        self.model = model
        self.budget = budget or Budget()
        self.faults = faults or FaultPlan([])
        self.prices = prices or {}
        self.trace = trace
        self.redactor = redactor or (trace.redactor if trace else Redactor())
        self.recording = recording
        self.tally = Tally()
        self.meter = meter or BudgetMeter(self.budget)
        self.world_tools = world_tools
        self.closed = False
        self._recording_dir: Path | None = None
        self._lock = threading.Lock()
        self._admitted: set[int] = set()  # calls the run budget admitted and that are not settled yet
        self.backend.notify = self.emit  # upstream retries and back-off are evidence of this attempt

    # ------------------------------------------------------------------------------ evidence
    def emit(self, kind: EventKind, data: dict[str, Any]) -> None:
        if self.trace is not None and not self.closed:
            self.trace.emit(Source.gateway, kind, data)

    def _record(self, entry: dict[str, Any]) -> None:
        if self.recording is None or self.closed:
            return
        if self._recording_dir != self.recording.parent:  # once, not on every call
            self.recording.parent.mkdir(parents=True, exist_ok=True)
            self._recording_dir = self.recording.parent
        with open(self.recording, "ab") as f:
            f.write(self.redactor.json_bytes(entry) + b"\n")

    def _error(self, wire: Wire, e: WireError, call_no: int) -> Answer:
        self.emit(EventKind.error, {"reason": e.type, "message": e.message, "status": e.status, "call": call_no})
        return Answer.json(e.status, wire.error_body(e), e.headers)

    def _admitted_once(self, call_no: int) -> bool:
        """True the first time an admitted call is settled or released (never twice)."""
        if self.meter.run is None:
            return False
        with self._lock:
            admitted = call_no in self._admitted
            self._admitted.discard(call_no)
        return admitted

    def _unsettled(self, call_no: int) -> None:
        """An admitted call that ended without being accounted frees its place in the run budget."""
        if self._admitted_once(call_no) and self.meter.run is not None:
            self.meter.run.release()

    def _settle(self, call_no: int, cost: float, tokens: int) -> None:
        """Charge an accounted call to the run budget (once, if the run budget admitted it)."""
        if self._admitted_once(call_no) and self.meter.run is not None:
            self.meter.run.settle(cost, tokens)

    def _refuse(self, wire: Wire, refusal: Refusal | RunRefusal, call_no: int, what: str) -> Answer:
        """A budget is spent: HTTP 400 ``budget_exceeded`` in the wire format's own error shape, recorded.
        The header names the budget, so a harness client (the judge) tells the run's from its own."""
        return Answer.json(400, wire.error_body(self._refusal(refusal, call_no, what)),
                           {BUDGET_HEADER: refusal.budget.value})

    def _refusal(self, refusal: Refusal | RunRefusal, call_no: int, what: str) -> WireError:
        """Record a budget refusal; the error the agent is answered (as a status, or in-band in a stream)."""
        name = refusal.budget.value
        with self._lock:
            if name not in self.tally.exceeded:
                self.tally.exceeded.append(name)
        self.emit(EventKind.budget_exceeded, {**refusal.record(), "call": call_no})
        return WireError(400, "budget_exceeded", refusal.message(what))

    def _charge(self, reply: ModelReply) -> Refusal | None:
        """Charge the turn and the tool calls this reply issues (world calls are the dispatcher's)."""
        counted = sum(1 for c in reply.tool_calls if not is_world_call(c.name, c.arguments, self.world_tools))
        return self.meter.charge_turn(counted)

    # ------------------------------------------------------------------------------ one call
    async def handle(self, wire: Wire, body: Any) -> Answer:
        with self._lock:
            self.tally.calls += 1
            call_no = self.tally.calls
        if not isinstance(body, dict):
            return self._error(wire, WireError(400, "invalid_request_error", "the body must be a JSON object"), call_no)
        try:
            req = wire.parse(body)
        except WireError as e:
            return self._error(wire, e, call_no)
        self.emit(EventKind.model_request, {"call": call_no, **req.summary()})

        over = self.tally.over(self.budget)
        if over is not None:
            name, limit, used = over
            self.meter.hit(BudgetName(name))
            return self._refuse(wire, Refusal(BudgetName(name), limit, used), call_no, "model calls are answered")
        refused = self.meter.before_turn()
        if refused is not None:
            return self._refuse(wire, refused, call_no, "model turns are answered")
        if self.meter.run is not None:  # the run-wide budget, shared by every attempt of the run
            stop = self.meter.run.admit()
            if stop is not None:
                self.meter.hit(BudgetName.run_budget)
                return self._refuse(wire, stop, call_no, "model calls are answered")
            with self._lock:
                self._admitted.add(call_no)
        answer: Answer | None = None
        try:
            answer = await self._answer(wire, req, call_no)
            return answer
        finally:
            if answer is None or answer.body is None:  # a relayed stream settles when it is accounted
                self._unsettled(call_no)

    async def _answer(self, wire: Wire, req: ModelRequest, call_no: int) -> Answer:
        """The call past its budgets: a planned fault, else the backend's answer, accounted."""
        fault = self.faults.for_call(call_no)
        if fault is not None:
            self.emit(EventKind.fault_injected, describe(fault, call_no))
            early = await self._early_fault(wire, fault, describe(fault, call_no))
            if early is not None:
                return early

        truncated = fault is not None and fault.kind is FaultKind.truncated
        if req.stream and not truncated and passes_through(self.backend):
            return await open_stream(self, wire, req, call_no)
        t0 = time.monotonic()
        try:
            reply = await self.backend.complete(req, call_no)
        except WireError as e:
            return self._error(wire, e, call_no)
        except Exception as e:  # noqa: BLE001 - a broken backend is an answer the agent sees, and evidence
            return self._error(wire, WireError(502, "backend_error", f"{type(e).__name__}: {e}"), call_no)
        latency = time.monotonic() - t0
        reply = self._filled(req, reply)
        refused = self._charge(reply)  # charging records nothing: the trace still shows the reply, then the refusal
        if refused is not None:  # the reply would take the attempt past its tool calls: not delivered
            self._account(req, reply, call_no, latency)
            return self._refuse(wire, refused, call_no, "tool calls are issued")

        rid = uuid.uuid4().hex[:20]
        chunks = wire.stream(reply, req, rid) if req.stream else [json.dumps(wire.render(reply, req, rid)).encode()]
        answer = Answer(200, chunks, stream=req.stream)
        if truncated:
            answer = _truncate(answer)
        facts = None
        if req.stream and not truncated:  # what the agent is sent, as a relayed stream records it
            data = b"".join(chunks)
            facts = {"frames": len(chunks), "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                     "ttfb_s": round(latency, 6), "complete": True}
        self._account(req, reply, call_no, latency, stream=facts)
        return answer

    async def _early_fault(self, wire: Wire, fault: Any, facts: dict[str, Any]) -> Answer | None:
        """Faults answered without the backend; latency only delays and returns None."""
        kind = fault.kind
        if kind is FaultKind.rate_limit:
            wait = facts["retry_after_s"]
            e = WireError(429, "rate_limit_exceeded", "rate limit reached (injected fault); retry later",
                          {"Retry-After": f"{wait:g}"})
            return Answer.json(429, wire.error_body(e), e.headers)
        if kind is FaultKind.server_error:
            status = int(facts["status"])
            return Answer.json(status, wire.error_body(WireError(status, "server_error", "upstream failure (injected fault)")))
        if kind is FaultKind.timeout:
            await asyncio.sleep(float(facts["hang_s"]))
            return Answer.json(504, wire.error_body(WireError(504, "timeout", "the model call timed out (injected fault)")))
        if kind is FaultKind.malformed:
            return Answer(200, [b'{"id": "broken", "choices": [{"message": {"content": "unterminated'], stream=False)
        if kind is FaultKind.latency:
            await asyncio.sleep(float(facts["delay_s"]))
        return None

    def _filled(self, req: ModelRequest, reply: ModelReply) -> ModelReply:
        """The reply with usage: the backend's own, else estimated (and marked ``counted``)."""
        if reply.usage.input_tokens == 0 and reply.usage.output_tokens == 0:
            return ModelReply(**{**reply.__dict__, "usage": count_usage(req, reply)})
        return reply

    def _account(self, req: ModelRequest, reply: ModelReply, call_no: int, latency: float,
                 stream: dict[str, Any] | None = None) -> None:
        usage = reply.usage
        model = reply.model or self.model
        cost = call_cost(self.prices, model, usage, self.model)
        with self._lock:
            self.tally.add(usage, cost)
        self._settle(call_no, cost, usage.input_tokens + usage.output_tokens)
        data = {"call": call_no, "model": model, "usage": usage.as_dict(), "latency_s": round(latency, 6),
                "cost_usd": cost, **reply.as_dict()}
        data["model"] = model
        if self.provider:
            data["provider"] = self.provider
        if stream is not None:
            data["stream"] = stream
        self.emit(EventKind.model_response, data)
        if reply.extra.get("error"):
            self.emit(EventKind.error, {"reason": "backend", "message": str(reply.extra["error"]), "call": call_no})
        entry = {"call": call_no, "wire": req.wire, "request": fingerprint(req), "reply": reply.as_dict()}
        self._record({**entry, "stream": stream} if stream is not None else entry)


def _truncate(answer: Answer) -> Answer:
    """Cut an answer mid-way: a stream stops inside a frame; a body drops mid-way."""
    if answer.stream:
        half = max(1, len(answer.chunks) // 2)
        cut = answer.chunks[half]
        return Answer(200, [*answer.chunks[:half], cut[: max(1, len(cut) // 2)]], stream=True)
    body = answer.chunks[0]
    return Answer(200, [body[: len(body) // 2]], declared_length=len(body))
