"""The running runner's control: `assay ctl` requests in, the run's event stream out.

The runner listens on a loopback port (written with a random token to ``RUN_DIR/control.json``,
mode 0600, see :mod:`assay.store.control_client`). A request changes the run's admission gate
(:class:`~assay.run.admission.Capacity`) in the runner's own event loop, so the scheduler sees
it at its next admission without polling; every change is recorded first in
``RUN_DIR/control/`` (who, when, what; sealed in the ledger: :mod:`assay.store.control_log`).

The same object is a run plugin: it hears the run's event stream like the terminal progress does
and forwards a summary of each event to subscribers (the viewer's live page), after the recorder
has sealed what the event announces.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import secrets
import time
from collections import Counter
from typing import Any, Callable

from assay.run.hooks import hookimpl
from assay.run.schedule import Limiter
from assay.store.control_client import CONTROL_FILE, MAX_LINE
from assay.store.control_log import append_change
from assay.store.rundir import RunDir

#: trace events worth a live view's line (the gateway's back-off is a ``log`` with this reason)
_FORWARDED = {"fault_injected", "budget_exceeded", "incident"}
_BACKOFF = "upstream_retry"
#: events a subscriber may fall behind by before it is dropped (a stuck viewer never holds the run)
_QUEUE = 10_000


class RunControl:
    """One runner's control server and event fan-out."""

    def __init__(self, rd: RunDir, limiter: Limiter, *, run_id: str, plan: list[Any] | None = None):
        self.rd, self.limiter, self.run_id, self.plan = rd, limiter, run_id, plan
        self.requeue: Callable[[str], list[str]] | None = None  # set by the executor that can requeue
        self.token = secrets.token_urlsafe(24)
        self.in_flight: dict[str, dict[str, Any]] = {}
        self.counts: Counter[tuple[str, str, str]] = Counter()  # (agent, category, end state) of final attempts
        self.budget: dict[str, Any] | None = None
        self.backoff: dict[str, dict[str, Any]] = {}
        self.planned = self.pending = 0
        self._subs: set[asyncio.Queue[dict[str, Any] | None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None

    # ------------------------------------------------------------------ server
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0, limit=MAX_LINE)
        port = self._server.sockets[0].getsockname()[1]
        path = self.rd.path / CONTROL_FILE
        tmp = path.with_name(f".tmp-{CONTROL_FILE}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"pid": os.getpid(), "port": port, "token": self.token, "run_id": self.run_id}, f)
        os.replace(tmp, path)

    async def close(self) -> None:
        try:
            (self.rd.path / CONTROL_FILE).unlink()
        except FileNotFoundError:
            pass
        for q in list(self._subs):
            q.put_nowait(None)
        if self._server is not None:
            self._server.close()

    def state(self) -> dict[str, Any]:
        counts: dict[str, dict[str, dict[str, int]]] = {}
        for (agent, category, end), n in self.counts.items():
            counts.setdefault(agent, {}).setdefault(category, {})[end] = n
        now = time.time()
        return {"type": "state", "run_id": self.run_id, "pid": os.getpid(), **self.limiter.capacity.state(),
                "planned": self.planned, "pending": self.pending, "in_flight_trials": dict(self.in_flight),
                "finished": counts, "budget": self.budget,
                "backoff": {m: b for m, b in self.backoff.items() if b["until"] > now}}

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            try:
                req = json.loads(line)
                ok = isinstance(req, dict) and hmac.compare_digest(str(req.get("token", "")), self.token)
            except ValueError:
                ok = False
            if not ok:
                await self._answer(writer, {"ok": False, "error": "refused: not this runner's token"})
                return
            if req.get("op") == "subscribe":
                await self._stream(writer)
                return
            await self._answer(writer, await self.command(str(req.get("op")), str(req.get("who") or "unknown"), req))
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write((json.dumps(answer) + "\n").encode())
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter) -> None:
        q: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue(_QUEUE)
        self._subs.add(q)
        try:
            await self._answer(writer, {"ok": True, **self.state()})
            while (event := await q.get()) is not None:
                await self._answer(writer, event)
        finally:
            self._subs.discard(q)

    # ------------------------------------------------------------------ commands
    async def command(self, op: str, who: str, req: dict[str, Any]) -> dict[str, Any]:
        """Apply one control command, recorded before it takes effect; the answer says what changed."""
        cap = self.limiter.capacity
        before = cap.state()
        if op == "status":
            return {"ok": True, **self.state()}
        if cap.stopped and op != "stop":
            return {"ok": False, "error": "the run is stopping: it starts no attempt again (resume it later)"}
        extra: dict[str, Any] = {}
        if op == "jobs":
            n = req.get("n")
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                return {"ok": False, "error": f"jobs needs a whole number of at least 1, not {n!r}"}
            after = {"jobs": n}
        elif op in ("pause", "resume"):
            after = {"paused": op == "pause"}
        elif op == "stop":
            after = {"stopped": True}
        elif op == "requeue-infra":
            if self.requeue is None:
                return {"ok": False, "error": "this run cannot requeue attempts (its executor has no control)"}
            after = {}
        else:
            return {"ok": False, "error": f"unknown command {op!r} (pause, resume, jobs N, requeue-infra, stop)"}
        if op == "requeue-infra":
            assert self.requeue is not None
            extra["trials"] = self.requeue(who)
        record = append_change(self.rd, op, who, {"before": before, "after": after, **extra})
        await cap.change(paused=after.get("paused"), limit=after.get("jobs"), stop=op == "stop")
        self._publish({"type": "control", **record})
        return {"ok": True, "change": record, **self.state()}

    # ------------------------------------------------------------------ the event stream
    def _publish(self, event: dict[str, Any]) -> None:
        """Hand ``event`` to every subscriber, from any thread (the gateway reports from its own)."""
        loop = self._loop
        if loop is None or loop.is_closed() or not self._subs:
            return
        def put() -> None:
            for q in list(self._subs):
                if q.full():
                    self._subs.discard(q)
                    continue
                q.put_nowait(event)
        loop.call_soon_threadsafe(put)

    @hookimpl
    def assay_run_started(self, planned: int, pending: int) -> None:
        self.planned, self.pending = planned, pending

    @hookimpl
    def assay_attempt_started(self, trial_id: str, attempt: int, retry_reason: str | None) -> None:
        self.in_flight[trial_id] = {"attempt": attempt, "started": time.time(), "retry_reason": retry_reason}
        self._publish({"type": "attempt_started", "trial_id": trial_id, "attempt": attempt, "ts": time.time(),
                       "retry_reason": retry_reason})

    @hookimpl
    def assay_attempt_finished(self, result: Any, final: bool) -> None:
        self.in_flight.pop(result.trial_id, None)
        if final:
            self.counts[(result.agent, result.category, result.end_state.value)] += 1
            self.pending = max(0, self.pending - 1)
        self._publish({"type": "attempt_finished", "trial_id": result.trial_id, "attempt": result.attempt,
                       "agent": result.agent, "category": result.category, "end_state": result.end_state.value,
                       "reason": result.reason, "final": final, "ts": time.time()})

    @hookimpl
    def assay_run_budget(self, spend: Any) -> None:
        self.budget = spend.record()
        self._publish({"type": "budget", **self.budget, "ts": time.time()})

    @hookimpl
    def assay_trace_event(self, event: Any) -> None:
        kind = getattr(event.kind, "value", event.kind)
        data = event.data
        if kind == "log" and data.get("reason") == _BACKOFF:
            model = str(data.get("model") or "?")
            self.backoff[model] = {"until": event.ts + float(data.get("wait_s") or 0.0), "status": data.get("status")}
            self._publish({"type": "backoff", "model": model, **self.backoff[model], "ts": event.ts})
        elif kind in _FORWARDED:
            self._publish({"type": kind, "trial_id": event.trial_id, "attempt": event.attempt, "ts": event.ts})
