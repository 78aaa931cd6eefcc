"""Pass-through streaming: the backend's deltas reach the agent as they arrive, and the same
deltas are folded into the reply that is accounted, recorded and traced.

The order inside one streamed call (budgets of calls and turns were checked before it): open
the backend stream (an upstream error is still an
HTTP error the agent sees, because nothing has been sent yet); relay every delta rendered in
the agent's wire format; at the end, account the usage of the final chunk (estimated only if
the backend sent none), charge the turn and its tool calls to the attempt's budget meter (past
the tool-call budget the stream ends with the refusal in-band, in the wire's own error shape,
instead of its finish), render the closing frames from the accounted reply, and record the
digest of every byte the agent was sent next to the reply, so the evidence names exactly what
the agent received.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator

from assay.gateway.answer import Answer, LastPiece
from assay.gateway.errors import WireError
from assay.gateway.neutral import ModelRequest
from assay.gateway.stream import Delta, ReplyBuilder
from assay.gateway.wire.base import Wire, sse
from assay.trace.events import EventKind

if TYPE_CHECKING:  # the session is passed in, never imported: relay sits below session
    from typing import Protocol

    class GatewaySession(Protocol):
        backend: Any

        def _error(self, wire: Wire, e: WireError, call_no: int) -> Answer: ...
        def _filled(self, req: ModelRequest, reply: Any) -> Any: ...
        def _charge(self, reply: Any) -> Any: ...
        def _refusal(self, refusal: Any, call_no: int, what: str) -> WireError: ...
        def _account(self, req: ModelRequest, reply: Any, call_no: int, latency: float,
                     stream: dict[str, Any] | None = None) -> None: ...
        def emit(self, kind: EventKind, data: dict[str, Any]) -> None: ...


async def open_stream(sess: "GatewaySession", wire: Wire, req: ModelRequest, call_no: int) -> "Answer":
    """Start a streamed answer: an error before the first batch is an ordinary error answer."""
    t0 = time.monotonic()
    deltas = sess.backend.stream(req, call_no)
    try:
        first = await deltas.__anext__()
    except StopAsyncIteration:
        return sess._error(wire, WireError(502, "backend_error", "the backend ended its stream before any answer"),
                           call_no)
    except WireError as e:
        return sess._error(wire, e, call_no)
    except Exception as e:  # noqa: BLE001 - a broken backend is an answer the agent sees, and evidence
        return sess._error(wire, WireError(502, "backend_error", f"{type(e).__name__}: {e}"), call_no)
    ttfb = time.monotonic() - t0
    return Answer(200, stream=True, body=_relay(sess, wire, req, call_no, first, deltas, t0, ttfb))


async def _relay(sess: "GatewaySession", wire: Wire, req: ModelRequest, call_no: int, first: list[Delta],
                 deltas: AsyncIterator[list[Delta]], t0: float, ttfb: float) -> AsyncIterator[bytes]:
    renderer = wire.renderer(req, uuid.uuid4().hex[:20])
    builder = ReplyBuilder()
    digest = hashlib.sha256()
    sent = frames = 0
    done = False
    problem: str | None = None
    try:
        batch: list[Delta] | None = first
        while batch is not None:
            out: list[bytes] = []
            for d in batch:
                builder.feed(d)
                out += renderer.feed(d)
            if out:  # one write for what arrived together
                data = b"".join(out)
                digest.update(data)
                sent += len(data)
                frames += len(out)
                yield data
            batch = await anext(deltas, None)
        done = True
    except WireError as e:
        problem = f"{e.type}: {e.message}"
    except Exception as e:  # noqa: BLE001 - the upstream broke mid-stream: recorded, the agent sees the cut
        problem = f"{type(e).__name__}: {e}"
    finally:
        await _aclose(deltas)
        if not done:  # the agent went away, or the backend broke: account what was streamed
            facts = {"frames": frames, "bytes": sent, "sha256": digest.hexdigest(), "ttfb_s": round(ttfb, 6),
                     "complete": False, "problem": problem or "the agent disconnected"}
            sess._account(req, sess._filled(req, builder.reply()), call_no, time.monotonic() - t0, stream=facts)
            if problem:
                sess.emit(EventKind.error, {"reason": "backend_stream", "message": problem, "call": call_no})
    if not done:
        raise StreamCut(problem or "")  # the server drops the connection: the agent sees the cut, as it happened
    reply = sess._filled(req, builder.reply())
    refused = sess._charge(reply)
    if refused is not None:  # past the tool-call budget: the agent gets the refusal in-band, not the finish
        e = sess._refusal(refused, call_no, "tool calls are issued")
        data = sse(wire.error_body(e), "error" if wire.name == "anthropic" else None)
        digest.update(data)
        facts = {"frames": frames + 1, "bytes": sent + len(data), "sha256": digest.hexdigest(),
                 "ttfb_s": round(ttfb, 6), "complete": False, "problem": "budget_exceeded"}
        sess._account(req, reply, call_no, time.monotonic() - t0, stream=facts)
        yield LastPiece(data)
        return
    tail = renderer.close(reply)
    data = b"".join(tail)
    digest.update(data)
    facts = {"frames": frames + len(tail), "bytes": sent + len(data), "sha256": digest.hexdigest(),
             "ttfb_s": round(ttfb, 6), "complete": True}
    sess._account(req, reply, call_no, time.monotonic() - t0, stream=facts)
    yield LastPiece(data)


class StreamCut(Exception):
    """The backend's stream broke after the answer started; the connection to the agent is dropped."""


async def _aclose(it: Any) -> None:
    close = getattr(it, "aclose", None)
    if close is not None:
        try:
            await close()
        except Exception:  # noqa: BLE001 - closing a broken upstream stream must not mask the answer
            pass
