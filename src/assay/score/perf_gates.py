"""``--fail-if`` on performance figures: CI gates between two versions of a product.

A gate reads one figure of the candidate's ``performance.json`` (or its ratio to the baseline's):

- ``resume.open_s@1000.p95>2s``: the p95 of a figure (``p50``, ``p95``, ``mean``, ``upper``/``lower``
  of its bootstrap interval), with a unit (``s``, ``ms``, ``B``, ``KB``, ``MB``, ``GB``, ``KiB``,
  ``MiB``, ``GiB``, or none);
- ``resume_p95_1000_turns>2s``: the same, in the short form of a scenario's open time;
- ``resume.open_s.exponent>1.2``, ``turns.peak_bytes.slope>1MB``: a curve's fitted exponent or its
  growth per step; ``rss_growth_per_turn>1MB`` and ``store_bytes_per_turn>64KB`` are the slopes
  of the ``turns`` scenario's memory peak and store size;
- a trailing ``.ratio`` reads candidate / baseline instead (``resume.open_s@1000.p95.ratio>1.25``).

A figure that is missing, unsupported or failed on either side trips the gate with the reason:
a gate that compared nothing does not pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay.errors import UsageError
from assay.records.comparison import GateCheck
from assay.records.perf import FigureStatus, PerfDocument

UNITS = {"": 1.0, "x": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9,
         "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3}
STATS = ("p50", "p95", "mean", "upper", "lower")
ALIASES = {"rss_growth_per_turn": ("turns", "peak_bytes", None, "slope"),
           "store_bytes_per_turn": ("turns", "store_bytes", None, "slope"),
           "tokens_per_turn": ("turns", "tokens_sent", None, "slope")}

_GATE = re.compile(r"^\s*([A-Za-z0-9_.@]+?)\s*(<=|>=|<|>)\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)\s*$")
_LONG = re.compile(r"^([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)(?:@(\d+))?\.(p50|p95|mean|upper|lower|exponent|slope)$")
_SHORT = re.compile(r"^([a-z][a-z0-9]*)_(p50|p95|mean)(?:_(\d+)(?:_[a-z]+)?)?$")


@dataclass(frozen=True)
class PerfGate:
    text: str
    scenario: str
    metric: str
    size: int | None
    stat: str
    op: str
    value: float
    ratio: bool = False

    @classmethod
    def parse(cls, text: str) -> "PerfGate":
        m = _GATE.match(text)
        if not m or m.group(4).lower() not in UNITS:
            raise UsageError(f"--fail-if {text!r}: expected FIGURE<VALUE[UNIT] with FIGURE like "
                             "resume.open_s@1000.p95, resume_p95_1000_turns or rss_growth_per_turn, UNIT one of "
                             "s ms B KB MB GB KiB MiB GiB (fix: e.g. --fail-if 'resume_p95_1000_turns>2s')")
        name, ratio = m.group(1), False
        if name.endswith(".ratio"):
            name, ratio = name[: -len(".ratio")], True
        parsed = ALIASES.get(name)
        if parsed is None and (long := _LONG.match(name)):
            parsed = (long.group(1), long.group(2), int(long.group(3)) if long.group(3) else None, long.group(4))
        if parsed is None and (short := _SHORT.match(name)):
            parsed = (short.group(1), "open_s", int(short.group(3)) if short.group(3) else None, short.group(2))
        if parsed is None:
            raise UsageError(f"--fail-if {text!r}: {name!r} names no performance figure (fix: SCENARIO.METRIC[@SIZE]."
                             f"STAT with STAT one of {', '.join(STATS)}, exponent or slope; or one of {', '.join(ALIASES)})")
        value = float(m.group(3)) * (1.0 if ratio else UNITS[m.group(4).lower()])
        return cls(text.strip(), *parsed, op=m.group(2), value=value, ratio=ratio)

    def read(self, doc: PerfDocument, agent: str) -> tuple[float | None, str]:
        """The figure for ``agent`` in ``doc``, or None and why not."""
        if self.stat in ("exponent", "slope"):
            c = next((c for c in doc.curves if c.agent == agent and c.scenario == self.scenario
                      and c.metric == self.metric), None)
            if c is None:
                return None, f"no {self.scenario}.{self.metric} curve for {agent} (fewer than two measured sizes)"
            return getattr(c, self.stat), ""
        f = next((f for f in doc.figures if f.agent == agent and f.scenario == self.scenario
                  and f.metric == self.metric and f.size == self.size), None)
        where = f"{self.scenario}.{self.metric}" + (f"@{self.size}" if self.size is not None else "")
        if f is None:
            return None, f"no figure {where} for {agent}"
        if f.status != FigureStatus.measured:
            return None, f"{where} is {f.status.value} for {agent}: {f.reason}"
        if self.stat in ("upper", "lower"):
            return (None, f"{where} has no interval (n={f.n})") if f.ci is None else \
                (f.ci[1] if self.stat == "upper" else f.ci[0], "")
        return getattr(f, self.stat), ""

    def check(self, base: PerfDocument | None, cand: PerfDocument, agent: str) -> GateCheck:
        value, why = self.read(cand, agent)
        if value is not None and self.ratio:
            if base is None:
                value, why = None, "a ratio needs a baseline"
            else:
                b, bwhy = self.read(base, agent)
                value, why = (value / b, "") if b else (None, f"baseline: {bwhy or 'zero'}")
        tripped = True if value is None else {"<": value < self.value, "<=": value <= self.value,
                                              ">": value > self.value, ">=": value >= self.value}[self.op]
        return GateCheck(threshold=self.text, reads="ratio" if self.ratio else self.stat, scope=agent, value=value,
                         tripped=tripped, why=f"{why} (unknown is failure)" if value is None else f"read {value:.6g}")


def perf_checks(base: PerfDocument | None, cand: PerfDocument, gates: list[PerfGate]) -> list[GateCheck]:
    """Every gate for every agent of the candidate (and the baseline, when it has one): the agents
    both documents hold; none in common is one tripped check per gate."""
    agents = sorted(set(cand.agents) & set(base.agents)) if base is not None else sorted(cand.agents)
    if not agents:
        return [GateCheck(threshold=g.text, reads=g.stat, scope="-", value=None, tripped=True,
                          why="no agent in both performance documents: nothing compared") for g in gates]
    return [g.check(base, cand, a) for g in gates for a in agents]
