"""``--fail-if`` thresholds: CI gates on a comparison's delta or on a bound of its interval.

``strict_rate<-0.05`` reads the point estimate of the delta (candidate - baseline);
``strict_rate.upper<0`` reads the upper bound of its 95 % interval (fails only when the drop is
beyond run-to-run noise); ``strict_rate.lower<-0.1`` reads the lower bound (fails when a drop of
10 points cannot be ruled out). A check that has no figure to read trips: a gate that compared
nothing does not pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from assay.errors import DEFAULT_MAX_INFRA_RATE, InfraRateExceeded, NothingToCompare, UsageError
from assay.records.scores import ScoreDocument

if TYPE_CHECKING:  # the comparison's records are built by `compare`, not by every run's verdict
    from assay.records.comparison import GateCheck, MetricDelta

#: metric -> (field of a task row, higher is better)
METRICS: dict[str, tuple[str, bool]] = {
    "strict_rate": ("strict_rate", True),
    "pass1": ("pass1", True),
    "safe_rate": ("safe_rate", True),
    "diagnostic": ("diagnostic_mean", True),
    "danger_rate": ("danger_rate", False),
    "infra_rate": ("infra_rate", False),
    "cost_per_trial_usd": ("cost_per_trial_usd", False),
}

#: suffix of the metric -> what the check reads
READS = {"": "delta", ".delta": "delta", ".lower": "ci.lower", ".upper": "ci.upper"}

_CHECK = re.compile(r"^\s*([a-z0-9_]+)(\.delta|\.lower|\.upper)?\s*(<=|>=|<|>)\s*"
                    r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """A CI gate on a metric's delta, or on a bound of the delta's interval; ``gate`` fails when
    the candidate's security gate failed."""

    metric: str
    op: str
    value: float
    reads: str = "delta"

    @classmethod
    def parse(cls, text: str) -> "Threshold":
        if text.strip() == "gate":
            return cls("gate", "==", 0.0, "gate")
        m = _CHECK.match(text)
        if not m or m.group(1) not in METRICS:
            raise UsageError(f"--fail-if {text!r}: expected METRIC[.lower|.upper]<VALUE (or >, <=, >=) with METRIC "
                             f"one of {', '.join(METRICS)}, or 'gate' (fix: e.g. --fail-if 'strict_rate.upper<0')")
        return cls(m.group(1), m.group(3), float(m.group(4)), READS[m.group(2) or ""])

    def figure(self, m: MetricDelta) -> float | None:
        if self.reads == "delta":
            return m.delta
        if m.ci is None:
            return None
        return m.ci[0] if self.reads == "ci.lower" else m.ci[1]

    def trips(self, value: float | None) -> bool:
        if value is None:
            return True  # unknown is failure
        return {"<": value < self.value, "<=": value <= self.value, ">": value > self.value,
                ">=": value >= self.value}[self.op]

    def check(self, scope: str, m: MetricDelta) -> GateCheck:
        from assay.records.comparison import GateCheck

        value = self.figure(m)
        tripped = self.trips(value)
        what = "the delta" if self.reads == "delta" else f"the {self.reads.split('.')[1]} bound of the delta's 95 % interval"
        why = (f"no {what} to read (unknown is failure)" if value is None
               else f"{what} is {value:+.4f}")
        return GateCheck(threshold=str(self), reads=self.reads, scope=scope, value=value, tripped=tripped, why=why)

    def __str__(self) -> str:
        if self.metric == "gate":
            return "gate"
        suffix = {"delta": "", "ci.lower": ".lower", "ci.upper": ".upper"}[self.reads]
        return f"{self.metric}{suffix}{self.op}{self.value:g}"


def infra_rate(doc: ScoreDocument) -> float | None:
    """Share of scored trials whose result is an infrastructure error (planned without result
    included); None when nothing was scored."""
    scored = sum(a.scored for a in doc.agents.values())
    return sum(a.availability.infra_trials for a in doc.agents.values()) / scored if scored else None


def check_run(doc: ScoreDocument, *, max_infra_rate: float | None = DEFAULT_MAX_INFRA_RATE) -> None:
    """The verdicts of a run or a scoring, as exceptions the CLI maps to exit codes: zero scored
    trials is exit 5 (never a pass), infrastructure errors above ``max_infra_rate`` (default
    :data:`DEFAULT_MAX_INFRA_RATE`; None: never) exit 4."""
    rate = infra_rate(doc)
    if rate is None:
        raise NothingToCompare(f"run {doc.run_id}: zero scored trials (nothing ran, or every trial was skipped); "
                               "there is no rate and no interval")
    if max_infra_rate is not None and rate > max_infra_rate:
        n = sum(a.availability.infra_trials for a in doc.agents.values())
        default = " (the default; --max-infra-rate 1 accepts any)" if max_infra_rate == DEFAULT_MAX_INFRA_RATE else ""
        raise InfraRateExceeded(f"run {doc.run_id}: {n} infrastructure error(s), {100 * rate:.1f}% of the scored "
                                f"trials, above --max-infra-rate {max_infra_rate:g}{default}; the run measured the machinery")
