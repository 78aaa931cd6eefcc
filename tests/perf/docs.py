"""Performance documents built from known samples (no sandbox), for the scoring, gate and report tests."""

from __future__ import annotations

from assay.records.perf import FigureStatus, HostFacts, PerfDocument, PerfSample
from assay.score.perf import score_samples


def samples(agent: str, *, open_per_turn: float = 0.001, leak: float = 0.0, contended: bool = False,
            reps: int = 5) -> list[PerfSample]:
    out = []
    host = HostFacts(load_per_cpu=2.0 if contended else 0.2, cpu_pressure=0.5 if contended else 0.01, steal=0.0,
                     contended=contended)
    for rep in range(reps):
        jitter = 1 + 0.01 * (rep - reps // 2)
        for n in (10, 100, 1000):
            out.append(PerfSample(agent=agent, scenario="resume", metric="open_s", unit="s", size=n, rep=rep,
                                  value=open_per_turn * n * jitter, host=host))
        for t in range(1, 6):
            out.append(PerfSample(agent=agent, scenario="turns", metric="peak_bytes", unit="bytes", size=t, rep=rep,
                                  value=50e6 + leak * t, host=host))
        for k in (1, 4):
            out.append(PerfSample(agent=agent, scenario="concurrency", metric="open_s", unit="s", size=k, rep=rep,
                                  value=0.5 * (1 + 0.5 * (k - 1)) * jitter, host=host))
    out.append(PerfSample(agent=agent, scenario="store", metric="open_s", unit="s", size=100,
                          status=FigureStatus.unsupported, reason=f"{agent} cannot take a planted history"))
    return out


def document(agents: dict[str, dict], reps: int = 5) -> PerfDocument:
    got = [s for a, kw in agents.items() for s in samples(a, reps=reps, **kw)]
    return score_samples(got, suite="t", repeat=reps, agents={a: "1" for a in agents},
                         kinds={"resume": "resume", "turns": "turns", "concurrency": "concurrency", "store": "store"})
