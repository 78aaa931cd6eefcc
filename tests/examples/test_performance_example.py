"""``examples/performance`` runs every scenario for the reference agent and each installed
product at CI sizes (one small size per scenario, once: the suite's own, so CI pays 11 to 12
product processes per product; the full sizes are bench/perf_products.py's): every figure is measured, or unsupported / failed with its reason
(never a zero), and the performance document, Markdown and HTML are written. Not a task suite:
it has no ``suite.yaml`` and no end state, so the every-example ``validate --mutants`` check
(which reads ``*/suite.yaml``) does not take it, by what it is rather than by its name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assay.agents.products import install
from assay.records.perf import FigureStatus
from assay.run.perf.runner import repetitions
from assay.spec.perf import ScenarioKind, load_perf_suite
from tests.conftest import cli_timeout
from tests.examples.test_all_examples_valid import SUITES

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "performance"
BENCH = EXAMPLE.parents[1] / "bench" / "perf_products.yaml"
PRODUCTS = ["pi", "hermes", "openclaw", "dsh"]

pytestmark = [pytest.mark.slow, pytest.mark.agents]
#: CPU seconds of one product's performance run here: OpenClaw's turns cost about 10 s each and this
#: file's whole run took 3 min 3 s at a load of 4-6 per CPU (docs/performance.md); 40 s is the largest step
PERF_RUN_CPU_S = 40.0


def cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI, with room for a product's turns on a loaded host (OpenClaw: about 10 s of CPU each)."""
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout(PERF_RUN_CPU_S))


def test_the_example_declares_every_scenario_kind_and_is_not_a_task_suite() -> None:
    suite = load_perf_suite(EXAMPLE)
    assert {s.kind for s in suite.scenarios} == set(ScenarioKind)
    # CI's cost: one repetition of one size per scenario (a product process each; OpenClaw's costs ~10 s of CPU)
    assert suite.repeat == 1 and all((s.repeat or 1) == 1 and len(s.size_list()) <= 1 for s in suite.scenarios)
    bench = load_perf_suite(BENCH)  # the full sizes: the same kinds, every figure 5 times
    assert {s.kind for s in bench.scenarios} == set(ScenarioKind)
    assert [repetitions(s.repeat, None, bench.repeat) for s in bench.scenarios] == [5] * len(bench.scenarios)
    assert "performance" not in SUITES and not (EXAMPLE / "suite.yaml").exists()


def _bwrap_usable() -> bool:
    from assay.sandbox.registry import backends

    table = backends()
    return "bwrap" in table and table["bwrap"]().status().usable


@pytest.mark.timeout(1200)  # a bound for a hang: OpenClaw's 12 processes took 5 min at a load of 5 per CPU
@pytest.mark.parametrize("agent", ["reference", *PRODUCTS])
def test_every_scenario_runs_for_the_agent(agent: str, tmp_path: Path) -> None:
    if not _bwrap_usable():
        pytest.skip("the bubblewrap sandbox is not usable here")
    if agent in PRODUCTS and install.find(agent) is None:
        pytest.skip(f"{agent} is not installed (assay agents install {agent})")
    out = tmp_path / "perf"
    r = cli("perf", str(EXAMPLE), "--agent", agent, "-o", str(out))
    assert r.returncode == 0, r.stderr[-3000:]
    from assay.score.perf import read_document

    doc = read_document(out)
    assert (out / "performance.md").is_file() and (out / "performance.html").is_file()
    scenarios = {s.id for s in load_perf_suite(EXAMPLE).scenarios}
    assert {f.scenario for f in doc.figures} == scenarios
    for f in doc.figures:
        assert f.status == FigureStatus.measured or f.reason, f  # never a silent gap
        if f.status != FigureStatus.measured:
            assert f.p50 is None and not f.values
    measured = {f.scenario for f in doc.figures if f.status == FigureStatus.measured}
    assert {"cold", "turns", "concurrency"} <= measured, measured  # every agent can start and continue
    if agent != "dsh":
        assert "resume" in measured
    else:  # DSH cannot take a planted history: unsupported, with its reason
        resume = [f for f in doc.figures if f.scenario == "resume"]
        assert all(f.status == FigureStatus.unsupported and "planted history" in f.reason for f in resume)
