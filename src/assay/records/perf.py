"""What a performance run writes: raw samples, and the figures and curves scored from them.

A performance figure sits beside capability, never inside it: its own document
(``performance.json``), its own section of a score document and of the reports, its own gates.
A scenario a product cannot do is ``unsupported`` with the reason; a figure that could not be
taken is ``failed`` with the error; neither is ever a zero.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

PERF_SCHEMA_VERSION = 1


class FigureStatus(str, Enum):
    measured = "measured"
    unsupported = "unsupported"  # the product cannot do the scenario (the reason says why)
    failed = "failed"  # the measurement was tried and gave nothing (the reason is the error)


class HostFacts(BaseModel):
    """The host while a figure was taken: the worst reading over its repetitions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    load_per_cpu: float | None = None
    cpu_pressure: float | None = None  # share of the wall time some task waited for a CPU (PSI some)
    steal: float | None = None  # share of CPU time stolen by the hypervisor (/proc/stat)
    contended: bool = False  # above run/hostload's thresholds: the figure is marked


class PerfSample(BaseModel):
    """One repetition of one figure (raw, append-only in ``perf-samples.jsonl``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    scenario: str
    metric: str  # e.g. open_s, peak_bytes, tokens_sent
    unit: str  # s, bytes, tokens, ratio
    size: int | None = None  # history turns, sessions in the store, concurrent sessions, turn number
    rep: int = 0
    value: float | None = None
    status: FigureStatus = FigureStatus.measured
    reason: str | None = None
    host: HostFacts = Field(default_factory=HostFacts)


class PerfFigure(BaseModel):
    """One figure over its repetitions: p50/p95 and a bootstrap interval of the mean."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    scenario: str
    metric: str
    unit: str
    size: int | None = None
    status: FigureStatus
    reason: str | None = None
    n: int = 0
    values: list[float] = Field(default_factory=list)
    p50: float | None = None
    p95: float | None = None
    mean: float | None = None
    ci: tuple[float, float] | None = None  # 95 % bootstrap interval of the mean
    host: HostFacts = Field(default_factory=HostFacts)

    @property
    def key(self) -> str:
        return f"{self.scenario}.{self.metric}" + (f"@{self.size}" if self.size is not None else "")


class PerfCurve(BaseModel):
    """A figure as it grows with a size (history turns, sessions, turn number): the p50 at each
    size and the fitted log-log exponent (1: linear), with the fit's R², or the slope per unit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str
    scenario: str
    metric: str
    unit: str
    sizes: list[int]
    p50: list[float]
    exponent: float | None = None  # slope of log(p50) on log(size)
    r2: float | None = None
    slope: float | None = None  # least-squares slope of p50 on size (unit per size step, e.g. bytes/turn)
    contended: bool = False


#: what each figure of a turn measures, and who timed it (kept in the document beside the figures)
METRICS = {
    "open_s": "exec start to the first model request at the gateway (the product's start and opening)",
    "first_answer_s": "exec start to the gateway's first answer sent (the gateway's clock, not the product's output)",
    "first_output_s": "exec start to the first byte of the product's stdout, as the harness received it",
    "first_token_s": "exec start to the answer to the turn's own request complete on the product's stdout, as "
                     "the harness received it: the first token after a resume as printed (close to turn_s: "
                     "printed at exit)",
    "turn_s": "the turn's exec, start to end",
    "stream_requested": "1 when the turn's own model request asked the gateway to stream its answer, else 0",
    "peak_bytes": "the sandbox control group's memory high-water mark over the turn's exec",
    "tokens_sent": "input tokens of the turn's last model request, as the gateway counted them",
    "store_bytes": "bytes of regular files under the agent home after the turn",
    "requests": "model requests of the turn's exec",
    "folding": "requests of the turn before its own (the one whose last message is the prompt): history folding",
    "compaction_s": "the turn's first folding request to its own request, at the gateway: the compaction's "
                    "duration (the scripted answer is instant, so the rest is the product's)",
    "accepts_input_during_compaction": "1 (yes) when the product, in its live mode, accepted a second message "
                                       "while the gateway held the answer to its summary request (the compaction "
                                       "in progress by the harness's clock); 0 when it refused it or did not answer "
                                       "while held. The reason carries the evidence",
    "input_ack_during_compaction_s": "the second message written on the product's stdin to its response read "
                                     "from its stdout, at the harness",
    "input_reached_model": "1 when a later model request carried the second message (the gateway's trace), else 0",
    "list_s": "the product's own session listing over the planted store",
    "inflation": "p50 open time of N sessions at once over that of one",
}


class PerfDocument(BaseModel):
    """``performance.json``: every figure and curve of a performance run, per agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = PERF_SCHEMA_VERSION
    suite: str
    repeat: int
    agents: dict[str, str | None]  # name -> version
    kinds: dict[str, str] = Field(default_factory=dict)  # scenario id -> its kind
    figures: list[PerfFigure]
    curves: list[PerfCurve]
    host: dict[str, object] = Field(default_factory=dict)
    metrics: dict[str, str] = Field(default_factory=dict)  # figure name -> what it measures (METRICS)


class PerfRunRecord(BaseModel):
    """``perf-run.json``: what a performance run was (written before its first sample)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    suite: str
    repeat: int
    agents: dict[str, str | None]
    kinds: dict[str, str]
    host: dict[str, object] = Field(default_factory=dict)
