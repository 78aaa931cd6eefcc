"""The measuring measured: synthetic agents of known cost, run through the real apparatus (the
scripted gateway, a bubblewrap sandbox and its control group), are measured back within a
tolerance that comes from the method, never from a wall-clock bound.

- Open time: the agent waits ``k`` seconds per history turn before its first model request, after
  a fixed start-up ``c`` (an interpreter in a sandbox). The log-log slope over sizes N1..N2 is
  then that of c + k·N: 1 when c = 0, less as c grows (0.77 for c = 0.35 s at k = 20 ms and
  N = 20..160, as on a host at a load of 10 per CPU). The test measures ``c`` itself (the same
  agent's cold start) and asserts the fitted exponent within 0.15 of the slope of c + k·N, and
  never above 1 + 0.1; the fit's R² is reported.
- Memory: the agent holds ``L`` bytes more on each live turn. Each control-group reading is exact
  to the kernel's per-CPU charge batch (64 pages), so the least-squares slope over turns 1..N is
  within 2·64 pages·CPUs/(N−1) of L.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.records.perf import FigureStatus
from assay.run import hostload
from assay.run.perf.runner import run_perf
from assay.sandbox.registry import backends
from assay.score.perf import loglog_fit, score_folder
from assay.spec.perf import PerfSuite
from tests.run.perf.synthetic import SyntheticAgent

pytestmark = pytest.mark.slow

PAGE = 4096
CHARGE_BATCH_PAGES = 64


def _bwrap():
    table = backends()
    if "bwrap" not in table or not table["bwrap"]().status().usable:
        pytest.skip("the bubblewrap sandbox is not usable here")
    return table["bwrap"]()


def test_open_time_linear_in_history_is_measured_as_exponent_one(tmp_path: Path) -> None:
    k, sizes = 0.02, [20, 40, 80, 160]
    suite = PerfSuite.model_validate({"name": "linear", "repeat": 3, "scenarios": [
        {"id": "cold", "kind": "cold_start"}, {"id": "resume", "kind": "resume", "sizes": sizes}]})
    make = lambda: SyntheticAgent("linear", open_s_per_turn=k / 2)  # noqa: E731 - a turn is 2 history events
    doc = score_folder(run_perf(suite, {"linear": make}, _bwrap(), tmp_path / "out").out)
    curve = next(c for c in doc.curves if c.metric == "open_s")
    c = next(f for f in doc.figures if f.key == "cold.open_s").p50
    assert c is not None
    fit = loglog_fit(sizes, [c + k * n for n in sizes])
    assert fit is not None
    expected = fit[0]
    print("open exponent", curve.exponent, "R2", curve.r2, "expected", expected, "start-up", c, curve.p50)
    assert curve.sizes == sizes
    assert curve.exponent is not None and abs(curve.exponent - expected) <= 0.15 and curve.exponent <= 1.1, \
        (curve.exponent, expected, c, curve.p50)
    assert curve.r2 is not None and curve.r2 > 0.9, curve
    fig = next(f for f in doc.figures if f.key == "resume.open_s@160")
    assert fig.n == 3 and fig.ci is not None and fig.ci[0] <= fig.mean <= fig.ci[1]
    assert fig.p50 <= fig.p95


def test_a_known_leak_per_turn_is_measured_back_within_the_charge_batch(tmp_path: Path) -> None:
    leak, turns = 8 << 20, 5
    suite = PerfSuite.model_validate({"name": "leak", "repeat": 1, "scenarios": [
        {"id": "turns", "kind": "turns", "sizes": [turns]}]})
    doc = score_folder(run_perf(suite, {"leaky": lambda: SyntheticAgent("leaky", leak_bytes_per_turn=leak)},
                                _bwrap(), tmp_path / "out").out)
    peak = next(c for c in doc.curves if c.metric == "peak_bytes")
    assert peak.sizes == list(range(1, turns + 1))
    tolerance = 2 * CHARGE_BATCH_PAGES * PAGE * hostload.cpus() / (turns - 1)
    print("leak slope", peak.slope, "of", leak, "tolerance", tolerance)
    assert peak.slope is not None and abs(peak.slope - leak) <= tolerance, (peak.slope, leak, tolerance, peak.p50)
    # and a product without a leak: the same agent holding nothing grows by less than the tolerance
    flat_doc = score_folder(run_perf(suite, {"flat": lambda: SyntheticAgent("flat")}, _bwrap(), tmp_path / "flat").out)
    slope = next(c for c in flat_doc.curves if c.metric == "peak_bytes").slope
    assert slope is not None and abs(slope) <= tolerance, slope


def test_a_scenario_the_agent_cannot_do_is_unsupported_with_its_reason_never_zero(tmp_path: Path) -> None:
    class NoHistory(SyntheticAgent):
        seeds_history = False

    suite = PerfSuite.model_validate({"name": "nohist", "repeat": 2, "scenarios": [
        {"id": "resume", "kind": "resume", "sizes": [10]}, {"id": "store", "kind": "store", "sizes": [10]}]})
    doc = score_folder(run_perf(suite, {"nohist": lambda: NoHistory("nohist")}, _bwrap(), tmp_path / "out").out)
    assert doc.figures
    for f in doc.figures:
        assert f.status == FigureStatus.unsupported and f.p50 is None and not f.values, f
        assert "cannot take a planted history" in (f.reason or "")
    assert not doc.curves


def test_an_agent_that_never_calls_the_model_fails_its_figures_with_the_reason(tmp_path: Path) -> None:
    class Mute(SyntheticAgent):
        async def run(self, ctx, since=None):  # type: ignore[no-untyped-def]
            res = await ctx.sandbox.exec(["/bin/sh", "-c", "echo broken >&2; exit 3"], timeout_s=10)
            from assay.agents.base import AgentOutcome
            return AgentOutcome(exit_code=res.exit_code, stderr=res.stderr)

    suite = PerfSuite.model_validate({"name": "mute", "repeat": 2, "scenarios": [{"id": "cold", "kind": "cold_start"}]})
    doc = score_folder(run_perf(suite, {"mute": lambda: Mute("mute")}, _bwrap(), tmp_path / "out").out)
    for f in doc.figures:
        assert f.status == FigureStatus.failed and f.p50 is None, f
        assert "no model request reached the gateway" in (f.reason or "") and "broken" in (f.reason or "")


def test_a_folding_call_is_counted_as_one_more_request_of_the_turn(tmp_path: Path) -> None:
    suite = PerfSuite.model_validate({"name": "fold", "repeat": 1, "scenarios": [
        {"id": "compaction", "kind": "compaction", "sizes": [4]}]})
    doc = score_folder(run_perf(suite, {"folder": lambda: SyntheticAgent("folder", requests=2)}, _bwrap(),
                                tmp_path / "out").out)
    fig = next(f for f in doc.figures if f.metric == "requests")
    assert fig.status == FigureStatus.measured and fig.p50 == 2.0, fig
