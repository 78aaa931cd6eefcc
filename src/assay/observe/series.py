"""The metric series of a run, folded from the scorer's own trial facts.

One accumulator, two feeds: the live plugin adds each trial as its final attempt lands in the
run directory, ``series_from_run`` adds every trial of a finished run through the scorer's
reader. Both render through the same collector, so a scrape of a live run and the textfile of
the finished run hold the same series. The rate gauges and the security gate are computed by
the scorer's :class:`~assay.score.aggregate.Aggregator`, never re-derived here.

Counters hold integers (cost in nano-dollars, durations in microseconds) so the order in which
trials finish cannot change a figure in its last digit.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from assay.observe import labels as L
from assay.records.manifest import RunManifest
from assay.records.trial_id import parse_trial_id
from assay.score.aggregate import Aggregator
from assay.score.recovery import counts_as_faulted
from assay.score.trials import TrialFacts

PREFIX = "agent_eval_"
#: upper bounds (seconds) of the trial wall-time histogram
DURATION_BUCKETS: tuple[float, ...] = (1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600)
NANO = 1_000_000_000
MICRO = 1_000_000


@dataclass(frozen=True)
class Spec:
    """One metric family: its name without prefix, type, help and label names."""

    name: str
    type: str  # counter | gauge | histogram
    help: str
    labels: tuple[str, ...]


AGENT = ("suite", "agent")
#: every per-agent counter and the trial fact it sums
AGENT_COUNTERS: dict[str, tuple[str, str]] = {
    "attempts": ("attempts", "Attempts of finished trials (retries included)."),
    "retries": ("retries", "Attempts beyond the first, each after a retryable infrastructure error."),
    "infra_attempts": ("infra_attempts", "Attempts that ended in an infrastructure error."),
    "model_calls": ("model_calls", "Model calls through the gateway, all attempts."),
    "tokens": ("tokens", "Input plus output tokens, all attempts."),
    "tool_calls": ("tool_calls", "Tool calls, all attempts."),
    "interventions": ("interventions", "Human interventions (approvals asked of a person), all attempts."),
    "wrong_side_effects": ("danger", "Wrong side effects actually executed."),
}
SPECS: tuple[Spec, ...] = (
    Spec("trials", "counter", "Finished trials by the end state of their final attempt.", AGENT + ("category", "result")),
    *(Spec(n, "counter", h, AGENT) for n, (_f, h) in AGENT_COUNTERS.items()),
    Spec("cost_usd", "counter", "Model cost in US dollars, all attempts.", AGENT),
    Spec("cleanup_failures", "counter", "Trials whose final attempt left processes behind.", AGENT),
    Spec("fault_trials", "counter", "Judged trials in which a tool, process or model fault fired.", AGENT),
    Spec("recovered_trials", "counter", "Judged trials with injected faults that still passed.", AGENT),
    Spec("incidents", "counter", "Security incidents, all attempts, by kind and severity.", AGENT + ("kind", "severity")),
    Spec("trial_duration_seconds", "histogram", "Wall time of a trial's final attempt.", AGENT + ("result",)),
    Spec("strict_rate", "gauge", "Strict success rate (macro over categories), as `assay score` computes it.", AGENT),
    Spec("strict_rate_ci_low", "gauge", "Lower end of the 95% interval of the strict rate (assay's).", AGENT),
    Spec("strict_rate_ci_high", "gauge", "Upper end of the 95% interval of the strict rate (assay's).", AGENT),
    Spec("security_gate_failed", "gauge", "1 when the agent's security gate FAILED, else 0.", AGENT),
    Spec("category_weight", "gauge", "Frozen category weight of the suite (for the macro rate in PromQL).",
         ("suite", "category")),
)
SPEC = {s.name: s for s in SPECS}


@dataclass
class Family:
    """A metric family ready to render: (label values, value) rows; histograms carry buckets."""

    spec: Spec
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    buckets: list[tuple[tuple[str, ...], list[int], float]] = field(default_factory=list)  # labels, counts, sum


class RunSeries:
    """Accumulates trial facts; :meth:`families` renders the current state. Thread-safe."""

    def __init__(self, manifest: RunManifest):
        self.manifest = manifest
        self.suite = str(manifest.suite.get("name", ""))
        self._lock = threading.Lock()
        self._agg = Aggregator(keep_trial_ids=False)
        self._counts: dict[tuple[str, tuple[str, ...]], int] = {}
        self._hist: dict[tuple[str, ...], list[int]] = {}  # labels -> bucket counts + [+Inf count]
        self._hist_sum: dict[tuple[str, ...], int] = {}
        self._kinds: dict[str, set[str]] = {}
        self.trials = 0
        self._zero()

    # ------------------------------------------------------------------ feeding
    def _zero(self) -> None:
        """Every series a panel divides by exists from the start at 0, so ``increase()`` sees
        the first trial of each (Prometheus only counts increases between two samples)."""
        cats = {t.id: t.category for t in self.manifest.tasks}
        planned: set[tuple[str, str]] = set()
        for tid in self.manifest.plan.trials:
            try:
                task, _v, agent, _r = parse_trial_id(tid)
            except ValueError:
                continue
            planned.add((agent, cats.get(task, "?")))
        for agent, cat in planned:
            for res in L.RESULTS:
                self._counts.setdefault(("trials", (self.suite, agent, cat, res)), 0)
        for agent in {a for a, _c in planned}:
            for name in (*AGENT_COUNTERS, "cost_usd", "cleanup_failures", "fault_trials", "recovered_trials"):
                self._counts.setdefault((name, (self.suite, agent)), 0)
            for res in L.RESULTS:
                self._hist.setdefault((self.suite, agent, res), [0] * (len(DURATION_BUCKETS) + 1))
                self._hist_sum.setdefault((self.suite, agent, res), 0)

    def _inc(self, name: str, labels: tuple[str, ...], by: int) -> None:
        key = (name, labels)
        self._counts[key] = self._counts.get(key, 0) + by

    def add(self, t: TrialFacts) -> None:
        """Add one trial (its final attempt decided the result; earlier attempts are in its sums)."""
        with self._lock:
            self.trials += 1
            self._agg.add(t)
            agent = (self.suite, t.agent)
            self._inc("trials", agent + (t.category, t.end_state), 1)
            for name, (fact, _h) in AGENT_COUNTERS.items():
                self._inc(name, agent, max(0, int(getattr(t, fact))))  # a missing trial has 0 attempts, -1 retries
            self._inc("cost_usd", agent, round(t.cost_usd * NANO))
            self._inc("cleanup_failures", agent, 0 if t.cleanup_clean else 1)
            if counts_as_faulted(t):
                self._inc("fault_trials", agent, 1)  # the scorer's recovery denominator (one predicate)
                self._inc("recovered_trials", agent, int(t.strict_pass))
            kinds = self._kinds.setdefault(t.agent, set())
            for inc in t.incidents:
                kind = L.incident_kind(inc.get("type"))
                if kind not in kinds and len(kinds) >= L.MAX_KINDS:
                    kind = "other"
                kinds.add(kind)
                self._inc("incidents", agent + (kind, L.severity(inc.get("severity"))), 1)
            hkey = agent + (t.end_state,)
            counts = self._hist.setdefault(hkey, [0] * (len(DURATION_BUCKETS) + 1))
            idx = next((i for i, b in enumerate(DURATION_BUCKETS) if t.wall_s <= b), len(DURATION_BUCKETS))
            counts[idx] += 1
            self._hist_sum[hkey] = self._hist_sum.get(hkey, 0) + round(t.wall_s * MICRO)

    def add_all(self, trials: Iterable[TrialFacts]) -> "RunSeries":
        for t in trials:
            self.add(t)
        return self

    # ------------------------------------------------------------------ rendering
    def _score_agents(self) -> dict[str, Any]:
        from assay.score.engine import capability_weights

        if not self._agg.agents:
            return {}
        return self._agg.finish(dict(self.manifest.categories), capability_weights(self.manifest))["agents"]

    def families(self) -> list[Family]:
        """The current value of every series, in :data:`SPECS` order (label rows sorted)."""
        with self._lock:
            fams = {s.name: Family(s) for s in SPECS}
            for (name, labels), v in sorted(self._counts.items()):
                fams[name].samples.append((labels, v / NANO if name == "cost_usd" else float(v)))
            for labels, counts in sorted(self._hist.items()):
                cum, acc = [], 0
                for c in counts:
                    acc += c
                    cum.append(acc)
                fams["trial_duration_seconds"].buckets.append((labels, cum, self._hist_sum[labels] / MICRO))
            for agent, doc in sorted(self._score_agents().items()):
                lab = (self.suite, agent)
                lo, hi = doc["strict_ci"]
                for name, value in (("strict_rate", doc["strict_rate"]), ("strict_rate_ci_low", lo),
                                    ("strict_rate_ci_high", hi)):
                    if value is not None:
                        fams[name].samples.append((lab, float(value)))
                fams["security_gate_failed"].samples.append((lab, float(doc["security"]["gate"] == "FAILED")))
            for cat, w in sorted(self.manifest.categories.items()):
                fams["category_weight"].samples.append(((self.suite, cat), float(w)))
            return list(fams.values())
