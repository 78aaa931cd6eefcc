"""The apparatus of a performance measurement: the model taken out of the number.

Each sample runs an agent's own turn in a fresh bubblewrap sandbox against the scripted gateway,
which answers every request at once with a fixed text; so what is timed is the product's own
cost. Every exec in the sandbox is timed (:class:`TimedSandbox`), with the high-water mark of the
sandbox's control group over it; the gateway's trace gives when each model request arrived and
how many tokens it carried. The host's load and CPU pressure are read around each sample.
"""

from __future__ import annotations

import dataclasses
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.base import AgentAdapter, AgentContext, AgentOutcome, ConversationTurn
from assay.gateway.service import ENDPOINT, GatewayService, new_key
from assay.gateway.session import GatewaySession
from assay.gateway.standalone import standalone_record
from assay.records.manifest import GatewayRecord
from assay.run import hostload
from assay.run.attempt.live import HOME_MOUNT
from assay.sandbox.base import Endpoint, ExecResult, Mount, Sandbox, SandboxBackend, SandboxSpec
from assay.spec.budget import Limits
from assay.spec.conversation import HistoryEvent
from assay.spec.load import LoadedTask
from assay.spec.task import TaskSpec
from assay.trace.events import EventKind
from assay.trace.writer import TraceWriter, read_events
from assay.untrusted.tree import remove_untrusted, walk_untrusted

#: the one answer of the perf gateway (every request, history or not): a word no product prints
#: by itself, so its first appearance on the product's stdout is the first token as printed
ANSWER = "okay-assay-perf"
MODEL_SCRIPT = f'turns:\n  - text: "{ANSWER}"\nfinal_text: "{ANSWER}"\n'
PROMPT = "Reply with the word ok."


@dataclass
class ExecTiming:
    """One exec in the sandbox: when it started and ended (epoch seconds) and its memory peak;
    when its stdout's first byte and the gateway's answer on it reached the harness (None: never)."""

    argv0: str
    start: float
    end: float
    peak_bytes: int | None
    first_output: float | None = None
    answer_printed: tuple[float, ...] = ()  # each appearance of the gateway's answer on its stdout


def printed_at(stdout: bytes, arrivals: tuple[tuple[float, int], ...], text: str, most: int = 64) -> tuple[float, ...]:
    """When each appearance of ``text`` (the first ``most``) was complete on a stdout that arrived
    in timed chunks (``(epoch s, bytes read by then)``): the arrival of the chunk holding its last
    byte. An appearance after the timed chunks has no time and ends the list (unknown, not a guess)."""
    out: list[float] = []
    needle, at = text.encode(), stdout.find(text.encode())
    while at >= 0 and len(out) < most:
        end = at + len(needle)
        t = next((t for t, n in arrivals if n >= end), None)
        if t is None:
            break
        out.append(t)
        at = stdout.find(needle, end)
    return tuple(out)


class TimedSandbox(Sandbox):
    """A sandbox whose every exec is timed, its control group's peak reset before and read after."""

    def __init__(self, inner: Sandbox):
        self.inner = inner
        self.spec = inner.spec
        self.execs: list[ExecTiming] = []

    @property
    def workspace_path(self) -> str:
        return self.inner.workspace_path

    def endpoint_url(self, name: str) -> str:
        return self.inner.endpoint_url(name)

    def mount_path(self, mount: Mount) -> str:
        return self.inner.mount_path(mount)

    async def exec(self, argv: list[str], **kw: Any) -> ExecResult:
        reset = self.inner.reset_memory_peak()
        start = time.time()
        res = await self.inner.exec(argv, **kw)
        end = time.time()
        arrivals = res.stdout_arrivals
        self.execs.append(ExecTiming(argv[0] if argv else "", start, end,
                                     self.inner.memory_peak_bytes() if reset else None,
                                     arrivals[0][0] if arrivals else None, printed_at(res.stdout, arrivals, ANSWER)))
        return res

    async def destroy(self):  # type: ignore[no-untyped-def]
        return await self.inner.destroy()

    def memory_peak_bytes(self) -> int | None:
        return self.inner.memory_peak_bytes()

    def reset_memory_peak(self) -> bool:
        return self.inner.reset_memory_peak()


@dataclass
class TurnFigures:
    """What one turn of an agent measured (None: not observed)."""

    open_s: float | None  # the turn's exec start -> the first model request at the gateway
    first_answer_s: float | None  # the turn's exec start -> the gateway's first answer sent
    turn_s: float | None  # the turn's exec, start to end
    peak_bytes: int | None  # the sandbox's memory high-water mark over the turn's exec
    tokens_sent: int | None  # input tokens of the turn's last model request (as the gateway counted them)
    store_bytes: int  # bytes under the agent home after the turn
    exit_code: int | None
    error: str | None = None
    requests: int | None = None  # model requests of the turn (a folding call is one more)
    first_output_s: float | None = None  # the turn's exec start -> the product's first stdout byte (harness-timed)
    first_token_s: float | None = None  # the turn's exec start -> the answer to its own request complete on the
    # product's stdout (an appearance before that request is a folding call's summary: the same scripted text)
    compaction_s: float | None = None  # its first folding request -> the turn's own request (None: no folding)
    folding: int | None = None  # requests of the turn before its own (the prompt's) request
    stream_requested: bool | None = None  # whether the turn's own request asked the gateway to stream


@dataclass
class Apparatus:
    """One scripted gateway, one sandbox backend and one small task for every sample of a perf run."""

    backend: SandboxBackend
    scratch: Path
    limits: Limits = field(default_factory=lambda: Limits(cpu_time_s=600, memory_mb=None, disk_mb=2048))
    timeout_s: float = 300.0
    service: GatewayService | None = None
    task: LoadedTask | None = None

    def start(self) -> None:
        self.scratch.mkdir(parents=True, exist_ok=True)
        script = self.scratch / "model.yaml"
        script.write_text(MODEL_SCRIPT)
        record: GatewayRecord = standalone_record("scripted", script=script)
        self.service = GatewayService(record)
        self.service.start_sync()
        spec = TaskSpec.model_validate({"id": "perf", "category": "performance", "tools": ["shell", "read"],
                                        "predicates": [{"id": "unused", "kind": "file_exists", "path": "never"}]})
        self.task = LoadedTask(spec=spec, dir=self.scratch, prompt=PROMPT, file_digests={})

    def stop(self) -> None:
        if self.service is not None:
            self.service.stop_sync()


@dataclass
class Session:
    """One agent's sandbox and home for a scenario's turns, and the gateway session it speaks to."""

    app: Apparatus
    agent: AgentAdapter
    sandbox: TimedSandbox
    ctx: AgentContext
    trace_path: Path
    sid: str = field(default_factory=lambda: str(uuid.uuid4()))
    turns_run: int = 0
    host: list[hostload.HostLoad] = field(default_factory=list)
    gateway: GatewaySession | None = None  # the gateway's side of the session (its backend can be wrapped)

    async def turn(self, history: tuple[HistoryEvent, ...] = ()) -> TurnFigures:
        """Run the agent's next turn of the session (the first one plants ``history`` first)."""
        self.turns_run += 1
        turn = ConversationTurn(self.turns_run, self.sid, history if self.turns_run == 1 else ())
        ctx = dataclasses.replace(self.ctx, turn=turn)
        before = len(self.sandbox.execs)
        t0 = hostload.sample()
        error = None
        try:
            outcome: AgentOutcome | None = await self.agent.run_turn(ctx, turn)
        except Exception as e:  # noqa: BLE001 - a failed turn is a failed figure, never a zero
            outcome, error = None, f"{type(e).__name__}: {e}"
        self.host.append(hostload.between(t0, hostload.sample()))
        return self.figures(self.sandbox.execs[before:], outcome, error)

    def figures(self, execs: list[ExecTiming], outcome: AgentOutcome | None, error: str | None) -> TurnFigures:
        requests = [e for e in read_events(self.trace_path) if e.kind == EventKind.model_request]
        answers = [e for e in read_events(self.trace_path) if e.kind == EventKind.model_response]
        own = None  # the turn's exec: the one during which its first model request arrived
        for ex in execs:
            if any(ex.start <= r.ts <= ex.end for r in requests):
                own = ex
                break
        store = store_bytes(self.ctx.home)
        if own is None:
            why = error or (f"no model request reached the gateway (exit {outcome.exit_code if outcome else None}: "
                            f"{(outcome.stderr if outcome else b'')[-300:].decode(errors='replace')})")
            return TurnFigures(None, None, execs[-1].end - execs[-1].start if execs else None,
                               execs[-1].peak_bytes if execs else None, None, store,
                               outcome.exit_code if outcome else None, why)
        mine = sorted((r for r in requests if own.start <= r.ts <= own.end), key=lambda r: r.ts)
        first = mine[0]
        answer = next((a for a in answers if a.ts >= first.ts), None)
        last = [a for a in answers if own.start <= a.ts <= own.end]  # the last request: after any folding
        tokens = (last[-1].data.get("usage") or {}).get("input_tokens") if last else None
        fold = folding(mine)
        since = (lambda t: t - own.start if t is not None else None)
        return TurnFigures(first.ts - own.start, (answer.ts - own.start) if answer else None, own.end - own.start,
                           own.peak_bytes, tokens, store, outcome.exit_code if outcome else None, error,
                           requests=len(mine), first_output_s=since(own.first_output),
                           first_token_s=since(next((t for t in own.answer_printed if t >= mine[fold[0]].ts), None)),
                           compaction_s=fold[1], folding=fold[0],
                           stream_requested=bool(mine[fold[0]].data.get("stream")))

    async def close(self) -> None:
        """Destroy the sandbox, then remove what the agent left (its home is hostile: no link followed)."""
        await self.sandbox.destroy()
        remove_untrusted(self.ctx.workspace.parent)


def folding(requests: list[Any]) -> tuple[int, float | None]:
    """A turn's requests (by arrival) split at its own: the first whose last message is the
    user's prompt (a later one, a title for instance, is not folding). Those before it are the
    product's folding of its history (a compaction call), and their first arrival to the turn's
    own request is the compaction's duration at the gateway (the scripted answer takes no time:
    what is left is the product's). ``(folding calls, seconds or None)``."""
    own = next((i for i, r in enumerate(requests) if r.data.get("last_role") == "user"
                and str(r.data.get("last_text") or "").rstrip().endswith(PROMPT)), len(requests) - 1)
    return own, (requests[own].ts - requests[0].ts) if own > 0 else None


def store_bytes(home: Path) -> int:
    """Bytes of regular files under the agent home: a walk that follows no link, bounded in
    entries and time (a store of 10⁴ sessions is well inside the bound)."""
    return sum(st.st_size for _rel, _full, st in walk_untrusted(home, max_entries=500_000)
               if st is not None and stat.S_ISREG(st.st_mode))


async def open_session(app: Apparatus, agent: AgentAdapter, label: str, extra: tuple[Mount, ...] = ()) -> Session:
    """A fresh workspace, home and sandbox for ``agent``, and its own gateway session (``extra``:
    more mounts, harness-owned)."""
    assert app.service is not None and app.task is not None
    root = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=app.scratch))
    ws, home = root / "workspace", root / "home"
    ws.mkdir()
    home.mkdir()
    trace_path = root / "gateway.jsonl"
    sess = app.service.open_session(None, key=new_key())
    sess.trace = TraceWriter(trace_path, label)
    limits = agent.limits(app.limits)
    mounts = (Mount(home, HOME_MOUNT, writable=True), *agent.mounts(app.task), *extra)
    inner = await app.backend.create(SandboxSpec(workspace=ws, limits=limits, mounts=mounts,
                                                 endpoints=(Endpoint(ENDPOINT, app.service.server.host, app.service.server.port),),
                                                 label=label))
    sb = TimedSandbox(inner)
    ctx = AgentContext(task=app.task, variant="base", prompt=PROMPT, sandbox=sb, workspace=ws, home=home,
                       home_inside=inner.mount_path(mounts[0]), attempt_dir=root / "agent-files",
                       trace=TraceWriter(root / "agent.jsonl", label), budget=app.task.spec.budget,
                       timeout_s=app.timeout_s, gateway_url=sb.endpoint_url(ENDPOINT), gateway_key=sess.key,
                       model=sess.model, tools=list(app.task.spec.tools),
                       mounts={HOME_MOUNT: inner.mount_path(mounts[0])})
    (root / "agent-files").mkdir()
    return Session(app, agent, sb, ctx, trace_path, gateway=sess)
