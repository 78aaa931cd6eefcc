"""Whether a session takes input while it compacts: measured from the harness's side.

The product runs in its live mode (:class:`assay.agents.live.LiveInput`: JSON commands on stdin,
events on stdout, through two FIFOs in a harness-owned folder mounted read-only in the sandbox)
over a planted history long enough to fold. The first message goes in; when the product's first
folding request reaches the gateway, **the gateway holds its answer**: the compaction is then in
progress by the harness's own clock, not by the product's word. While it is held, the second
message is offered; the product's response to it (accepted, refused, or none within
:data:`ACK_WAIT_S`) and its arrival time are recorded, and only then is the summary answered.
Afterwards the gateway's trace says whether the second message reached the model in a later
request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import stat
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import AgentAdapter, ConversationTurn
from assay.agents.live import LiveInput
from assay.gateway.backends.base import BackendSession
from assay.gateway.neutral import ModelReply, ModelRequest
from assay.records.perf import FigureStatus, HostFacts, PerfSample
from assay.run.perf.apparatus import PROMPT, Apparatus, Session, open_session
from assay.sandbox.base import Mount
from assay.spec.conversation import HistoryEvent
from assay.trace.events import EventKind
from assay.trace.writer import read_events

#: the second message: a marker no product writes by itself, found again in the gateway's trace
SECOND = "A second message, typed while the session compacts (assay-perf-second)."
MARKER = "assay-perf-second"
#: seconds the gateway holds the summary while the product is asked (a bound for its answer)
ACK_WAIT_S = 30.0
#: where the FIFO folder is seen inside the sandbox
INSIDE = "/assay-live"


def kind_of(summary: dict[str, Any]) -> str:
    """A model request, as the perf trace summarises it: the turn's own (its last message the
    prompt), the second message's, or a folding request (anything before the turn's own)."""
    text = str(summary.get("last_text") or "")
    if MARKER in text:
        return "second"
    if summary.get("last_role") == "user" and text.rstrip().endswith(PROMPT):
        return "own"
    return "folding"


class HeldFold(BackendSession):
    """One gateway session's backend, which holds its first folding request (one before the
    turn's own: a later one, a title, is not the compaction) until released, and tells the
    harness's loop of every request as it arrives (``(kind, call, epoch s)``)."""

    def __init__(self, inner: BackendSession, loop: asyncio.AbstractEventLoop, arrivals: asyncio.Queue):
        self.inner, self.loop, self.arrivals = inner, loop, arrivals
        self.notify = inner.notify
        self.release = threading.Event()
        self.held: tuple[int, float] | None = None  # the held request's call and arrival
        self.own_seen = False

    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        kind, ts = kind_of(req.summary()), time.time()
        hold = kind == "folding" and self.held is None and not self.own_seen
        self.own_seen = self.own_seen or kind == "own"
        if hold:
            self.held = (call_no, ts)
        self.loop.call_soon_threadsafe(self.arrivals.put_nowait, ("gateway", ts, {"kind": kind, "call": call_no}))
        if hold:  # the gateway's own thread waits, bounded: a lost harness never hangs it
            await asyncio.to_thread(self.release.wait, ACK_WAIT_S * 4)
        return await self.inner.complete(req, call_no)

    async def close(self) -> None:
        self.release.set()
        await self.inner.close()


class _Lines(asyncio.Protocol):
    """The product's stdout, split on LF only (JSONL), each line timed as it arrived."""

    def __init__(self, queue: asyncio.Queue):
        self.queue, self.buf = queue, b""

    def data_received(self, data: bytes) -> None:
        ts = time.time()
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line.rstrip(b"\r"))
            except ValueError:
                event = {"unparsed": line[:300].decode(errors="replace")}
            self.queue.put_nowait(("out", ts, event if isinstance(event, dict) else {"value": event}))


@dataclass
class Fifos:
    """Two FIFOs the product's stdin and stdout are bound to: the host holds both ends of each
    open (read and write), so no open blocks, whichever side comes first."""

    folder: Path
    fd_in: int = -1
    transport: asyncio.BaseTransport | None = None

    @classmethod
    def make(cls, folder: Path) -> "Fifos":
        folder.mkdir(mode=0o755)
        for name in ("in", "out"):
            os.mkfifo(folder / name, 0o666)
            os.chmod(folder / name, 0o666)  # the sandbox's uid is not ours: it writes and reads as "other"
        os.chmod(folder, 0o755)
        return cls(folder)

    async def open(self, queue: asyncio.Queue) -> None:
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
        self.fd_in = os.open(self.folder / "in", flags)
        fd_out = os.open(self.folder / "out", flags | os.O_NONBLOCK)
        for fd in (self.fd_in, fd_out):
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                raise OSError(f"{self.folder}: not the FIFOs the harness made")
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.connect_read_pipe(lambda: _Lines(queue), os.fdopen(fd_out, "rb", buffering=0))

    def send(self, line: bytes) -> float:
        """Write one command line; when it was written (epoch s)."""
        os.write(self.fd_in, line)
        return time.time()

    def close(self) -> None:
        if self.fd_in >= 0:
            os.close(self.fd_in)
            self.fd_in = -1
        if self.transport is not None:
            self.transport.close()
            self.transport = None


def wrapped(argv: list[str]) -> list[str]:
    """The product's argv with its stdin and stdout bound to the FIFOs (a shell that becomes it)."""
    return ["/bin/sh", "-c", 'exec "$@" <"$0/in" >"$0/out"', INSIDE, *argv]


@dataclass
class Probe:
    """What one live session showed (epoch seconds; None: not seen)."""

    folded: bool = False
    held_call: int | None = None
    held_at: float | None = None
    sent_at: float | None = None
    answered_at: float | None = None
    accepted: bool | None = None
    response: str | None = None
    released_at: float | None = None
    reached_call: int | None = None  # the later request that carried the second message
    reached_at: float | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)  # what the gateway told, in order (diagnostics)
    error: str | None = None
    command: str = ""
    exited: bool = False

    @property
    def during(self) -> bool:
        """Whether the product answered while the gateway still held its summary."""
        return self.answered_at is not None and self.released_at is not None and self.answered_at < self.released_at


async def _next(queue: asyncio.Queue, deadline: float) -> tuple[str, float, dict[str, Any]] | None:
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    try:
        return await asyncio.wait_for(queue.get(), left)
    except asyncio.TimeoutError:
        return None


async def probe(sess: Session, live: LiveInput, fifos: Fifos, hold: HeldFold, queue: asyncio.Queue) -> Probe:
    """Drive one live session: first message, the second while its summary is held, then until
    it settles with nothing queued (or exits, or the session's timeout passes)."""
    p, proto = Probe(command=live.protocol.during_command), live.protocol
    deadline = time.monotonic() + sess.app.timeout_s
    await fifos.open(queue)
    ctx = sess.ctx
    task = asyncio.ensure_future(ctx.sandbox.exec(wrapped(live.argv), env=live.env, cwd=ctx.sandbox.workspace_path,
                                                  timeout_s=sess.app.timeout_s))
    task.add_done_callback(lambda t: queue.put_nowait(("exit", time.time(), {})))
    try:
        fifos.send(proto.prompt(PROMPT, "first"))
        while p.error is None and not p.folded:  # until the summary is held, or the turn went without one
            item = await _next(queue, deadline)
            if item is None:
                p.error = f"no folding request and no answer before the session's timeout (requests: {p.requests})"
            elif item[0] == "exit":
                p.exited, p.error = True, "the product exited before it folded"
            elif item[0] == "gateway":
                p.requests.append(item[2])
                if item[2]["kind"] == "folding":
                    p.folded, (p.held_call, p.held_at) = True, hold.held or (item[2]["call"], item[1])
                elif item[2]["kind"] == "own":
                    break  # no folding at this size: the turn's own request came first
            elif (got := proto.response(item[2], "first")) is not None and not got[0]:
                p.error = f"the product refused the first message: {got[1]}"
        if p.folded and p.error is None:
            await _ask_while_held(p, proto, fifos, queue, hold)
        if p.error is None:
            await _until_settled(p, proto, fifos, queue, deadline)
    finally:
        hold.release.set()
        fifos.close()  # stdin's end: the product's live mode exits
        try:
            await asyncio.wait_for(asyncio.shield(task), 30)
        except asyncio.TimeoutError:
            await ctx.sandbox.destroy()  # it did not: the sandbox's end kills it (idempotent; the session closes after)
            await asyncio.gather(task, return_exceptions=True)
    res = task.result() if not task.cancelled() and task.exception() is None else None
    if p.error is not None and res is not None:
        p.error += f" (exit {res.exit_code}: {res.stderr[-300:].decode(errors='replace')})"
    _reached(p, sess)
    return p


async def _ask_while_held(p: Probe, proto: Any, fifos: Fifos, queue: asyncio.Queue, hold: HeldFold) -> None:
    """Offer the second message while the summary is held; release it on the answer or the bound."""
    p.sent_at = fifos.send(proto.during(SECOND, "during"))
    bound = time.monotonic() + ACK_WAIT_S
    while p.answered_at is None:
        item = await _next(queue, bound)
        if item is None:
            break
        if item[0] == "exit":
            p.exited, p.error = True, "the product exited while its summary was held"
            break
        if item[0] == "gateway":
            p.requests.append(item[2])
        elif (got := proto.response(item[2], "during")) is not None:
            p.answered_at, (p.accepted, p.response) = item[1], got
    hold.release.set()
    p.released_at = time.time()


async def _until_settled(p: Probe, proto: Any, fifos: Fifos, queue: asyncio.Queue, deadline: float) -> None:
    """Until the product settles with nothing running or queued (asked with its state command)."""
    while not p.exited:
        item = await _next(queue, deadline)
        if item is None:
            p.error = f"the product did not settle before the session's timeout (requests: {p.requests})"
            return
        kind, ts, data = item
        if kind == "exit":
            p.exited = True
            return
        if kind == "gateway":
            p.requests.append(data)
        elif p.sent_at is not None and (got := proto.response(data, "during")) is not None:
            if p.answered_at is None:
                p.answered_at, (p.accepted, p.response) = ts, got  # answered only after the summary
            elif not got[0]:  # accepted, then failed: a second response to the same command
                p.accepted, p.response = False, f"{p.response}, then {got[1]}"
        elif proto.settled(data):
            fifos.send(proto.state("state"))
        elif proto.response(data, "state") is not None and proto.idle(data):
            return


def _reached(p: Probe, sess: Session) -> None:
    """The later request that carried the second message, from the gateway's trace."""
    if p.sent_at is None:
        return
    for e in read_events(sess.trace_path):
        if e.kind == EventKind.model_request and MARKER in str(e.data.get("last_text") or "") and e.ts >= p.sent_at:
            p.reached_call, p.reached_at = e.data.get("call"), e.ts
            return


#: the figures of one live session over a planted history (unit of each)
FIGURES = {"accepts_input_during_compaction": "bool", "input_ack_during_compaction_s": "s",
           "input_reached_model": "bool"}

#: why a product has no live input here, in its own terms (an adapter with ``live_input`` has one)
NO_LIVE = {
    "hermes": ("Hermes runs here as `hermes chat --query` (one message per process, on its command line, stdin "
               "closed): nothing can be offered while it compacts. Its ACP server (`hermes acp`, JSON-RPC over "
               "stdio) would take prompts during a session, but needs the `hermes-agent[acp]` extra, which assay "
               "does not install (`hermes acp --check`: ACP dependencies not installed), and an ACP client"),
    "openclaw": ("OpenClaw runs here as `openclaw agent --local --message` (one message per process, stdin closed). "
                 "It takes messages while it works only through its WebSocket Gateway daemon (`openclaw gateway`; "
                 "`openclaw acp` is a bridge to it), which assay does not run"),
    "dsh": ("`dsh --profile headless` answers one task per process (stdin closed); its SDK runtime (`dsh "
            "--profile sdk`, JSON-RPC over stdio) would take requests while it runs, not driven here"),
    "reference": ("the reference loop never folds its history (it sends its whole message list at every step) "
                  "and reads its one prompt from a file: there is no compaction to offer input during"),
}


def no_live_reason(agent: AgentAdapter) -> str | None:
    """Why ``agent`` cannot be offered a message while it works, or None (it has ``live_input``)."""
    if callable(getattr(agent, "live_input", None)):
        return None
    return NO_LIVE.get(agent.name, f"{agent.name} has no live input mode (live_input): one message per process")


async def measure(app: Apparatus, agent: AgentAdapter, label: str, history: tuple[HistoryEvent, ...]) -> Probe:
    """One live session of ``agent`` over a planted ``history``, its summary held at the gateway."""
    folder = Path(tempfile.mkdtemp(prefix=f"{label}-live-", dir=app.scratch))
    fifos = Fifos.make(folder / "fifo")
    sess = await open_session(app, agent, label, (Mount(fifos.folder, INSIDE),))
    queue: asyncio.Queue = asyncio.Queue()
    assert sess.gateway is not None
    hold = HeldFold(sess.gateway.backend, asyncio.get_running_loop(), queue)
    sess.gateway.backend = hold
    try:
        turn = ConversationTurn(1, sess.sid, history)
        sess.ctx = dataclasses.replace(sess.ctx, turn=turn)
        try:
            await agent.seed_session(sess.ctx, turn)  # type: ignore[attr-defined]
            live: LiveInput = agent.live_input(sess.ctx)  # type: ignore[attr-defined]
            return await probe(sess, live, fifos, hold, queue)
        except Exception as e:  # noqa: BLE001 - the figure's failure, named
            return Probe(error=f"the live session failed: {type(e).__name__}: {e}"[:500])
    finally:
        hold.release.set()
        fifos.close()
        await sess.close()
        shutil.rmtree(folder, ignore_errors=True)


def evidence(p: Probe) -> str:
    """What the harness saw, in its own times: the figure's reason."""
    assert p.sent_at is not None and p.held_at is not None
    said = f"{p.command} written {p.sent_at - p.held_at:.3f} s after the summary request (call {p.held_call}) " \
           "reached the gateway, which held its answer; "
    if p.answered_at is None:
        said += f"no answer within {ACK_WAIT_S:.0f} s while held, nor after"
    elif p.during:
        said += f"answered {p.answered_at - p.sent_at:.3f} s later, while held: {p.response}"
    else:
        assert p.released_at is not None
        said += f"no answer within {ACK_WAIT_S:.0f} s while held; answered {p.answered_at - p.released_at:.3f} s " \
                f"after the summary was released: {p.response}"
    if p.reached_call is not None:
        return said + f"; the message reached the model in call {p.reached_call}"
    return said + "; the message never reached the model"


def samples(agent: str, scenario: str, size: int, rep: int, p: Probe, host: HostFacts) -> list[PerfSample]:
    """The probe's figures: measured, unsupported (no folding at this size) or failed (the error)."""
    def one(metric: str, value: float | None, status: FigureStatus, reason: str | None) -> PerfSample:
        return PerfSample(agent=agent, scenario=scenario, metric=metric, unit=FIGURES[metric], size=size, rep=rep,
                          value=value, status=status, reason=reason, host=host)
    if p.error is not None:
        return [one(m, None, FigureStatus.failed, p.error) for m in FIGURES]
    if not p.folded:
        why = f"{agent} did not fold its history at this size: its turn's own request was its first"
        return [one(m, None, FigureStatus.unsupported, why) for m in FIGURES]
    said = evidence(p)
    out = [one("accepts_input_during_compaction", 1.0 if p.during and p.accepted else 0.0, FigureStatus.measured,
               said)]
    if p.answered_at is not None and p.sent_at is not None:  # the evidence is the first figure's: not repeated
        out.append(one("input_ack_during_compaction_s", p.answered_at - p.sent_at, FigureStatus.measured,
                       None if p.during else "answered only after the summary was released"))
    else:
        out.append(one("input_ack_during_compaction_s", None, FigureStatus.failed, said))
    out.append(one("input_reached_model", 1.0 if p.reached_call is not None else 0.0, FigureStatus.measured,
                   f"in call {p.reached_call}" if p.reached_call is not None else "in no later request"))
    return out
