"""Performance figures from raw samples: p50/p95, a bootstrap interval, growth as a curve and a
fitted exponent (docs/performance.md).

One function per figure. The interval is the project's own bootstrap (:func:`stats.paired_bootstrap`
over one stratum: the mean of the repetitions, resampled with a fixed seed). A curve's exponent
is the least-squares slope of log(p50) on log(size): 1 is O(n), 0 is flat, with the fit's R²
so a curve that is not a power law says so. Growth per unit (bytes per turn) is the plain
least-squares slope of p50 on size.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

from assay.records.perf import (METRICS, FigureStatus, HostFacts, PerfCurve, PerfDocument, PerfFigure, PerfRunRecord,
                               PerfSample)
from assay.records.scores import ScoreDocument
from assay.score.stats import paired_bootstrap, percentile

#: the folder of a run directory ``assay perf --out RUN/performance`` writes, read into its score
PERF_FOLDER = "performance"
#: metrics whose growth is read as bytes (or tokens) per size step, not only as an exponent
PER_STEP = {"peak_bytes", "store_bytes", "tokens_sent"}


def host_of(samples: Sequence[PerfSample]) -> HostFacts:
    """The worst host reading over a figure's repetitions; contended if any repetition was."""
    def worst(values: Iterable[float | None]) -> float | None:
        vs = [v for v in values if v is not None]
        return max(vs) if vs else None
    return HostFacts(load_per_cpu=worst(s.host.load_per_cpu for s in samples),
                     cpu_pressure=worst(s.host.cpu_pressure for s in samples),
                     steal=worst(s.host.steal for s in samples), contended=any(s.host.contended for s in samples))


def interval(values: Sequence[float], seed: int = 0) -> tuple[float, float] | None:
    """95 % bootstrap interval of the mean of the repetitions (None below two)."""
    if len(values) < 2:
        return None
    return paired_bootstrap({"all": list(values)}, {"all": 1.0}, seed=seed)


def figure(samples: Sequence[PerfSample]) -> PerfFigure:
    """One figure from its repetitions (all of one agent, scenario, metric and size). Any
    repetition unsupported makes the figure unsupported; no value at all makes it failed."""
    first = samples[0]
    base = dict(agent=first.agent, scenario=first.scenario, metric=first.metric, unit=first.unit, size=first.size,
                host=host_of(samples))
    unsupported = next((s for s in samples if s.status == FigureStatus.unsupported), None)
    if unsupported is not None:
        return PerfFigure(**base, status=FigureStatus.unsupported, reason=unsupported.reason)
    values = sorted(s.value for s in samples if s.value is not None and s.status == FigureStatus.measured)
    if not values:
        why = next((s.reason for s in samples if s.reason), "no repetition gave a value")
        return PerfFigure(**base, status=FigureStatus.failed, reason=why)
    failed = [s for s in samples if s.value is None or s.status != FigureStatus.measured]
    # a measured figure keeps the evidence its first repetition gave (input during compaction), if any
    reason = (f"{len(failed)} of {len(samples)} repetitions failed: {failed[0].reason}" if failed
              else next((s.reason for s in samples if s.reason), None))
    return PerfFigure(**base, status=FigureStatus.measured, reason=reason, n=len(values), values=values,
                      p50=percentile(values, 50), p95=percentile(values, 95), mean=sum(values) / len(values),
                      ci=interval(values))


def loglog_fit(sizes: Sequence[float], values: Sequence[float]) -> tuple[float, float] | None:
    """(exponent, R²) of log(value) = a + exponent·log(size); None below two usable points."""
    pts = [(math.log(s), math.log(v)) for s, v in zip(sizes, values) if s > 0 and v > 0]
    return _fit(pts)


def linear_slope(sizes: Sequence[float], values: Sequence[float]) -> float | None:
    """Least-squares slope of value on size (e.g. bytes per turn); None below two sizes."""
    fit = _fit(list(zip(sizes, values)))
    return fit[0] if fit else None


def _fit(pts: list[tuple[float, float]]) -> tuple[float, float] | None:
    if len({x for x, _ in pts}) < 2:
        return None
    n = len(pts)
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    sxy = sum((x - mx) * (y - my) for x, y in pts)
    syy = sum((y - my) ** 2 for _, y in pts)
    slope = sxy / sxx
    r2 = 1.0 if syy == 0 else (sxy * sxy) / (sxx * syy)
    return slope, r2


def curve(figures: Sequence[PerfFigure]) -> PerfCurve | None:
    """The growth of one metric over its sizes (measured figures only; None below two sizes)."""
    pts = sorted((f.size, f.p50) for f in figures if f.status == FigureStatus.measured and f.size is not None
                 and f.p50 is not None)
    if len(pts) < 2:
        return None
    first = figures[0]
    sizes, p50 = [s for s, _ in pts], [v for _, v in pts]
    fit = loglog_fit(sizes, p50)
    return PerfCurve(agent=first.agent, scenario=first.scenario, metric=first.metric, unit=first.unit, sizes=sizes,
                     p50=p50, exponent=fit[0] if fit else None, r2=fit[1] if fit else None,
                     slope=linear_slope(sizes, p50) if first.metric in PER_STEP else None,
                     contended=any(f.host.contended for f in figures))


def inflation(figures: Sequence[PerfFigure], concurrent: set[str], scenario_metric: str = "open_s") -> list[PerfFigure]:
    """Latency inflation of a concurrency scenario: the p50 open time of N sessions at once over
    that of one (a ratio; 1 is no inflation). Only where the scenario measured a size 1."""
    out = []
    groups: dict[tuple[str, str], dict[int, PerfFigure]] = defaultdict(dict)
    for f in figures:
        if f.metric == scenario_metric and f.size is not None and f.scenario in concurrent:
            groups[(f.agent, f.scenario)][f.size] = f
    for (agent, scenario), by in groups.items():
        one = by.get(1)
        for n, f in sorted(by.items()):
            base = dict(agent=agent, scenario=scenario, metric="inflation", unit="ratio", size=n, host=f.host)
            if f.status != FigureStatus.measured or one is None or one.status != FigureStatus.measured or not one.p50:
                why = f.reason or (one.reason if one else "no single-session figure to compare with")
                out.append(PerfFigure(**base, status=f.status if f.status != FigureStatus.measured
                                      else FigureStatus.failed, reason=why))
                continue
            assert f.p50 is not None and f.p95 is not None
            out.append(PerfFigure(**base, status=FigureStatus.measured, n=f.n, p50=f.p50 / one.p50,
                                  p95=f.p95 / one.p50, mean=(f.mean or 0) / one.p50))
    return out


def score_folder(folder: Path, *, write: bool = True) -> PerfDocument:
    """Score a performance folder (``perf-run.json`` and ``perf-samples.jsonl``, as ``assay perf``
    wrote them) into its document, written as ``performance.json`` beside them unless ``write`` is off."""
    record = PerfRunRecord.model_validate_json((folder / "perf-run.json").read_text())
    samples = [PerfSample.model_validate_json(line) for line in
               (folder / "perf-samples.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    doc = score_samples(samples, suite=record.suite, repeat=record.repeat, agents=record.agents, host=record.host,
                        kinds=record.kinds)
    if write:
        (folder / "performance.json").write_text(doc.model_dump_json(indent=1))
    return doc


def read_document(path: Path) -> PerfDocument:
    """``performance.json`` of a performance folder (or the file itself)."""
    file = path / "performance.json" if path.is_dir() else path
    return PerfDocument.model_validate_json(file.read_text())


def with_performance(doc: ScoreDocument, run_dir: Path) -> ScoreDocument:
    """The score document with the run's performance section, when ``assay perf`` wrote one
    beside it (``RUN/performance/performance.json``); unchanged otherwise."""
    file = run_dir / PERF_FOLDER / "performance.json"
    if not file.is_file():
        return doc
    return doc.model_copy(update={"performance": read_document(file)})


def score_samples(samples: Sequence[PerfSample], *, suite: str, repeat: int, agents: dict[str, str | None],
                  host: dict[str, object] | None = None, kinds: dict[str, str] | None = None) -> PerfDocument:
    """Every figure and curve of a performance run (``kinds``: scenario id -> its kind)."""
    groups: dict[tuple, list[PerfSample]] = defaultdict(list)
    for s in samples:
        groups[(s.agent, s.scenario, s.metric, s.size)].append(s)
    figures = [figure(g) for _, g in sorted(groups.items(), key=lambda kv: (kv[0][:3], kv[0][3] or 0))]
    figures += inflation(figures, {sid for sid, kind in (kinds or {}).items() if kind == "concurrency"})
    by_metric: dict[tuple, list[PerfFigure]] = defaultdict(list)
    for f in figures:
        if f.size is not None and f.unit != "bool":  # a yes/no is no growth
            by_metric[(f.agent, f.scenario, f.metric)].append(f)
    curves = [c for fs in by_metric.values() if (c := curve(fs)) is not None]
    metrics = {m: METRICS[m] for m in sorted({f.metric for f in figures}) if m in METRICS}
    return PerfDocument(suite=suite, repeat=repeat, agents=agents, figures=figures, curves=curves, host=host or {},
                        kinds=kinds or {}, metrics=metrics)
