"""Each scenario kind of a performance suite, as raw samples (one per repetition and figure).

A scenario an agent cannot do gives ``unsupported`` samples with the agent's own reason (DSH
cannot take a planted history); a turn that gave no figure gives ``failed`` samples with the
error. Never a zero.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Awaitable, Callable

from assay.agents.base import AgentAdapter, ConversationTurn
from assay.records.perf import FigureStatus, HostFacts, PerfSample
from assay.run import hostload
from assay.run.perf import during
from assay.run.perf.apparatus import Apparatus, Session, TurnFigures, open_session
from assay.run.perf.host import Steal
from assay.run.perf.stores import list_seconds, plant_store
from assay.spec.conversation import AgentSaid, HistoryEvent, UserSaid
from assay.spec.perf import Scenario, ScenarioKind

#: figure -> unit, of one turn
TURN_METRICS = {**during.FIGURES, "open_s": "s", "first_answer_s": "s", "turn_s": "s", "peak_bytes": "bytes",
                "tokens_sent": "tokens", "store_bytes": "bytes", "requests": "requests", "first_output_s": "s",
                "first_token_s": "s", "compaction_s": "s", "folding": "requests", "stream_requested": "bool"}
#: figures of a turn that start from the product's own output or its folding: absent is not a failure
NOT_SEEN = {"first_output_s": "{agent} printed nothing on its stdout during the turn",
            "first_token_s": "the answer to the turn's own request never appeared on {agent}'s stdout",
            "compaction_s": "{agent} did not fold its history at this size: the turn's own request was its first "
                            "({tokens} tokens sent)"}
#: what a resume measures, beside the turn's own figures
FIRST = ("first_output_s", "first_token_s")


def history(turns: int, words: int) -> tuple[HistoryEvent, ...]:
    """A typed history of ``turns`` user/agent exchanges of ``words`` words each."""
    filler = " ".join(f"w{i % 97}" for i in range(max(0, words - 2)))
    return tuple(x for i in range(turns) for x in (UserSaid(text=f"question {i} {filler}".strip()),
                                                     AgentSaid(text=f"answer {i} {filler}".strip())))


def no_history_reason(agent: AgentAdapter) -> str | None:
    """Why ``agent`` cannot open a planted history (its own words), or None."""
    if agent.session_mechanism is None:
        return f"{agent.name} has no session it can continue between turns"
    if not agent.seeds_history:
        return (f"{agent.name} cannot take a planted history as its own session ({agent.session_mechanism}); "
                "a history is never pasted into a prompt")
    return None


def host_facts(load: hostload.HostLoad, steal: float | None) -> HostFacts:
    return HostFacts(load_per_cpu=load.load_per_cpu, cpu_pressure=load.cpu_pressure, steal=steal,
                     contended=hostload.contended(load))


def turn_samples(agent: str, scenario: str, size: int | None, rep: int, f: TurnFigures, host: HostFacts,
                 metrics: tuple[str, ...]) -> list[PerfSample]:
    out = []
    for m in metrics:
        value = getattr(f, m)
        ran = f.error is None and f.open_s is not None
        ok = value is not None and ran
        status = FigureStatus.measured if ok else FigureStatus.failed
        reason = None if ok else (f.error or f"no {m}")
        if ran and value is None and m in NOT_SEEN:  # the turn ran; the product does not do this
            status, reason = FigureStatus.unsupported, NOT_SEEN[m].format(agent=agent, tokens=f.tokens_sent)
        out.append(PerfSample(agent=agent, scenario=scenario, metric=m, unit=TURN_METRICS[m], size=size, rep=rep,
                              value=float(value) if ok else None, status=status, reason=reason, host=host))
    return out


def unsupported(agent: str, sc: Scenario, reason: str, metrics: tuple[str, ...]) -> list[PerfSample]:
    sizes: list[int | None] = list(sc.size_list()) or [None]
    if sc.kind == ScenarioKind.turns:
        sizes = list(range(1, sc.size_list()[0] + 1))
    return [PerfSample(agent=agent, scenario=sc.id, metric=m, unit=TURN_METRICS.get(m, "s"), size=s,
                       status=FigureStatus.unsupported, reason=reason) for s in sizes for m in metrics]


Factory = Callable[[], AgentAdapter]


async def _one_turn(app: Apparatus, make: Factory, label: str, hist: tuple[HistoryEvent, ...] = ()
                    ) -> tuple[TurnFigures, HostFacts]:
    sess = await open_session(app, make(), label)
    try:
        steal = Steal()
        f = await sess.turn(hist)
        return f, host_facts(sess.host[-1], steal.share())
    finally:
        await sess.close()


async def cold_start(app: Apparatus, make: Factory, sc: Scenario, rep: int) -> list[PerfSample]:
    agent = make()
    f, host = await _one_turn(app, make, f"{agent.name}-{sc.id}-{rep}")
    return turn_samples(agent.name, sc.id, None, rep, f, host,
                        ("open_s", "first_answer_s", *FIRST, "turn_s", "peak_bytes", "stream_requested"))


async def resume(app: Apparatus, make: Factory, sc: Scenario, rep: int, extra: tuple[str, ...] = ()) -> list[PerfSample]:
    agent = make()
    metrics = ("open_s", "first_answer_s", *FIRST, "peak_bytes", "tokens_sent", "store_bytes", *extra)
    if (why := no_history_reason(agent)) is not None:
        return unsupported(agent.name, sc, why, metrics) if rep == 0 else []
    out = []
    for n in sc.size_list():
        f, host = await _one_turn(app, make, f"{agent.name}-{sc.id}-{n}-{rep}", history(n, sc.words))
        out += turn_samples(agent.name, sc.id, n, rep, f, host, metrics)
    return out


async def turns(app: Apparatus, make: Factory, sc: Scenario, rep: int) -> list[PerfSample]:
    """N live turns of one session: the memory peak, store bytes and tokens of each."""
    agent = make()
    metrics = ("open_s", "peak_bytes", "store_bytes", "tokens_sent")
    if agent.session_mechanism is None:
        return unsupported(agent.name, sc, no_history_reason(agent) or "", metrics) if rep == 0 else []
    sess = await open_session(app, agent, f"{agent.name}-{sc.id}-{rep}")
    out: list[PerfSample] = []
    try:
        for n in range(1, sc.size_list()[0] + 1):
            steal = Steal()
            f = await sess.turn()
            out += turn_samples(agent.name, sc.id, n, rep, f, host_facts(sess.host[-1], steal.share()), metrics)
            if f.error is not None:  # a lost session: the later turns measure nothing
                break
    finally:
        await sess.close()
    return out


async def store(app: Apparatus, make: Factory, sc: Scenario, rep: int) -> list[PerfSample]:
    """A store of N planted sessions (one exchange each), then a new session's first turn."""
    agent = make()
    metrics = ("open_s", "store_bytes", "list_s")
    why = no_history_reason(agent) or no_store_reason(agent)
    if why is not None:
        return unsupported(agent.name, sc, why, metrics) if rep == 0 else []
    out: list[PerfSample] = []
    for n in sc.size_list():
        sess = await open_session(app, agent, f"{agent.name}-{sc.id}-{n}-{rep}")
        try:
            planted = await plant_store(sess, n)
            if planted is not None:
                out += [PerfSample(agent=agent.name, scenario=sc.id, metric=m, unit=TURN_METRICS.get(m, "s"), size=n, rep=rep,
                                   status=FigureStatus.failed, reason=planted) for m in metrics]
                continue
            steal = Steal()
            f = await fresh_turn(sess)
            host = host_facts(sess.host[-1], steal.share())
            out += turn_samples(agent.name, sc.id, n, rep, f, host, metrics[:2])
            listed, why = await list_seconds(sess)
            status = FigureStatus.measured if listed is not None else (
                FigureStatus.failed if why and why.startswith("the session list exited") else FigureStatus.unsupported)
            out.append(PerfSample(agent=agent.name, scenario=sc.id, metric="list_s", unit="s", size=n, rep=rep,
                                  value=listed, status=status, reason=why, host=host))
        finally:
            await sess.close()
    return out


def no_store_reason(agent: AgentAdapter) -> str | None:
    """Why ``agent`` keeps no store of several sessions to plant, or None."""
    if not callable(getattr(agent, "seed_session", None)):
        return (f"{agent.name} keeps one conversation per home ({agent.session_mechanism}): there is no store "
                "of sessions to fill")
    return None


async def fresh_turn(sess: Session) -> TurnFigures:
    """A new session's first turn beside the planted ones (the agent's run, without the one-session check)."""
    sess.turns_run += 1
    turn = ConversationTurn(1, str(uuid.uuid4()))
    ctx = dataclasses.replace(sess.ctx, turn=turn)
    before = len(sess.sandbox.execs)
    t0 = hostload.sample()
    error = None
    try:
        outcome = await sess.agent.run(ctx)
    except Exception as e:  # noqa: BLE001
        outcome, error = None, f"{type(e).__name__}: {e}"
    sess.host.append(hostload.between(t0, hostload.sample()))
    return sess.figures(sess.sandbox.execs[before:], outcome, error)


async def compaction(app: Apparatus, make: Factory, sc: Scenario, rep: int) -> list[PerfSample]:
    """A long planted history of long messages: tokens sent against the history's own size, the
    requests of the turn (a product that folds its history first makes one more), and when it
    folds, how long the folding took (its first folding request to the turn's own request). Then,
    for a product with a live input mode, whether it takes a message while it folds
    (run/perf/during.py); for any other, why not."""
    got = await resume(app, make, sc, rep, extra=("requests", "folding", "compaction_s", "turn_s"))
    agent = make()
    why = during.no_live_reason(agent)
    if (no_history := no_history_reason(agent)) is not None:
        why = f"{no_history}, so no compaction can be brought on here" + (f"; besides, {why}" if why else "")
    if why is not None:
        return got + (unsupported(agent.name, sc, why, tuple(during.FIGURES)) if rep == 0 else [])
    for n in sc.size_list():
        steal, t0 = Steal(), hostload.sample()
        probe = await during.measure(app, make(), f"{agent.name}-{sc.id}-live-{n}-{rep}", history(n, sc.words))
        host = host_facts(hostload.between(t0, hostload.sample()), steal.share())
        got += during.samples(agent.name, sc.id, n, rep, probe, host)
    return got


async def concurrency(app: Apparatus, make: Factory, sc: Scenario, rep: int) -> list[PerfSample]:
    """N sessions' cold starts at once: every session's open time is a sample of size N."""
    agent = make()
    out: list[PerfSample] = []
    for n in sc.size_list():
        got = await asyncio.gather(*(_one_turn(app, make, f"{agent.name}-{sc.id}-{n}-{rep}-{i}") for i in range(n)))
        for i, (f, host) in enumerate(got):
            out += turn_samples(agent.name, sc.id, n, rep * n + i, f, host, ("open_s",))
    return out


RUNNERS: dict[ScenarioKind, Callable[[Apparatus, Factory, Scenario, int], Awaitable[list[PerfSample]]]] = {
    ScenarioKind.cold_start: cold_start, ScenarioKind.resume: resume, ScenarioKind.store: store,
    ScenarioKind.turns: turns, ScenarioKind.compaction: compaction, ScenarioKind.concurrency: concurrency}
