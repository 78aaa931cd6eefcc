"""Compare: shared subset only, paired deltas with intervals, CI gates, nothing-to-compare and
suite changes, agent against agent, and the CLI's exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.records.comparison import Comparison
from assay.score import score_run
from assay.score.compare import Threshold, compare_agents, compare_scores
from tests.conftest import cli_timeout
from tests.score.synth import attempt, write_run

SUITE = {"name": "s", "version": "1", "digest": "d" * 64}


def assay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout())


def _run(path: Path, passing: set[str], tasks: list[str], *, agent: str = "a", reps: int = 2, run_id: str = "r",
         **kw: object) -> Path:
    rs = [attempt(t, "code" if i % 2 else "ops", agent, r, "pass" if t in passing else "fail")
          for i, t in enumerate(tasks) for r in range(1, reps + 1)]
    return write_run(path, {"code": 1, "ops": 1}, rs, run_id=run_id, **kw).path


def test_regression_beyond_noise_trips_the_gate(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(16)]
    base = _run(tmp_path / "base", set(tasks), tasks + ["only_base"], run_id="base")
    cand = _run(tmp_path / "cand", set(tasks[:6]), tasks + ["only_cand"], run_id="cand")
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("strict_rate<-0.05")])
    m = cmp.metrics["strict_rate"]
    assert cmp.shared_units == 16 and cmp.nothing_to_compare is None
    assert {(x.task, x.why) for x in cmp.left_out} == {
        ("only_base", "not in the candidate"), ("only_cand", "candidate unit with no paired baseline unit")}
    assert m.baseline == pytest.approx(1.0)  # numerator and denominator from the shared subset only
    assert m.delta == pytest.approx(-10 / 16)
    assert m.ci is not None and m.ci[1] < 0 and m.p_sign_test < 0.01
    assert m.moved_beyond_noise and m.direction == "regressed"
    assert cmp.regressed and cmp.failed
    assert cmp.metrics["safe_rate"].moved_beyond_noise is False
    assert [f.task for f in cmp.flipped] == sorted(tasks[6:]) and {f.direction for f in cmp.flipped} == {"regressed"}


def test_identical_runs_do_not_move(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(8)]
    base = _run(tmp_path / "base", set(tasks[:4]), tasks)
    cand = _run(tmp_path / "cand", set(tasks[:4]), tasks)
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("strict_rate<-0.05")])
    assert not any(m.moved_beyond_noise for m in cmp.metrics.values())
    assert not cmp.regressed and not cmp.flipped


def test_interval_gate_reads_the_bound_not_the_point(tmp_path: Path) -> None:
    """One task of four flips: the point delta is -25 points, but the interval reaches 0, so a gate on
    its upper bound does not trip while a gate on the point does, and each says what it read."""
    tasks = ["t0", "t1", "t2", "t3"]
    base = _run(tmp_path / "base", set(tasks), tasks, reps=1)
    cand = _run(tmp_path / "cand", set(tasks[1:]), tasks, reps=1)
    point, bound = Threshold.parse("strict_rate<-0.05"), Threshold.parse("strict_rate.upper<0")
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[point, bound])
    by = {(c.threshold, c.scope): c for c in cmp.checks}
    assert by[("strict_rate<-0.05", "all")].tripped and by[("strict_rate<-0.05", "all")].reads == "delta"
    upper = by[("strict_rate.upper<0", "all")]
    assert upper.reads == "ci.upper" and not upper.tripped and upper.value == pytest.approx(0.0)
    assert "upper bound" in upper.why
    assert cmp.failed and all("strict_rate<-0.05" in f for f in cmp.failed)


def test_a_gate_with_nothing_to_read_trips() -> None:
    from assay.records.comparison import MetricDelta

    m = MetricDelta(baseline=None, candidate=None, delta=None, ci=None, p_sign_test=1.0, units=0,
                    higher_is_better=True, moved_beyond_noise=False, direction=None)
    for text in ("strict_rate<-0.05", "strict_rate.lower<-0.1", "strict_rate.upper<0"):
        assert Threshold.parse(text).check("all", m).tripped, text


def test_different_agents_are_not_paired_silently(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"t0"}, ["t0", "t1"], agent="old", suite=SUITE)
    cand = _run(tmp_path / "cand", {"t0", "t1"}, ["t0", "t1"], agent="new", suite=SUITE)
    cmp = compare_scores(score_run(base), score_run(cand))
    assert cmp.shared_units == 0 and cmp.nothing_to_compare and "--pair" in cmp.nothing_to_compare
    paired = compare_scores(score_run(base), score_run(cand), agent_map={"old": "new"})
    assert paired.agent_pairs == {"old": "new"} and paired.shared_units == 2
    assert paired.metrics["strict_rate"].delta == pytest.approx(0.5)
    with pytest.raises(UsageError, match="'nobody'"):
        compare_scores(score_run(base), score_run(cand), agent_map={"nobody": "new"})


def test_a_side_with_zero_scored_trials_is_nothing_to_compare(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"t0"}, ["t0", "t1"])
    rs = [attempt(t, "ops", "a", 1, "skipped", reason="unsupported") for t in ("t0", "t1")]
    cand = write_run(tmp_path / "cand", {"code": 1, "ops": 1}, rs).path
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("strict_rate<-0.05")])
    assert cmp.nothing_to_compare == "the candidate has zero scored trials for the compared agent(s)"
    doc = score_run(cand)
    assert doc.agents["a"].strict_rate is None and doc.agents["a"].strict_ci_micro == (None, None)
    assert doc.agents["a"].availability.rate is None  # never "availability 100 %" over nothing


def test_different_suites_are_refused_unless_asked_then_paired_by_task_digest(tmp_path: Path) -> None:
    digests = {"t0": ("ops", "a" * 64), "t1": ("code", "b" * 64), "t2": ("ops", "c" * 64)}
    changed = {**digests, "t1": ("code", "e" * 64)}
    base = _run(tmp_path / "base", {"t0", "t1"}, ["t0", "t1", "t2"], suite=SUITE, task_digests=digests)
    cand = _run(tmp_path / "cand", {"t0"}, ["t0", "t1", "t2"], suite={**SUITE, "digest": "f" * 64},
                task_digests=changed)
    with pytest.raises(UsageError, match="different suites.*--allow-suite-change"):
        compare_scores(score_run(base), score_run(cand))
    cmp = compare_scores(score_run(base), score_run(cand), allow_suite_change=True)
    assert cmp.paired_by == "task_digest" and cmp.shared_units == 2
    assert ("t1", "task changed or not in the candidate suite") in {(x.task, x.why) for x in cmp.left_out}
    assert any("different suites" in n for n in cmp.notes)
    r = assay("compare", str(base), str(cand))
    assert r.returncode == 2 and "--allow-suite-change" in r.stderr and not r.stdout
    ok = assay("compare", str(base), str(cand), "--allow-suite-change", "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["paired_by"] == "task_digest"


def test_agent_against_agent_in_one_run(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(10)]
    rs = [attempt(t, "code", "good", 1, "pass") for t in tasks]
    rs += [attempt(t, "code", "bad", 1, "pass" if t in tasks[:2] else "fail") for t in tasks]
    rs += [attempt("solo", "code", "good", 1, "pass")]
    doc = score_run(write_run(tmp_path / "r", {"code": 1}, rs).path)
    (pair,) = compare_agents(doc)
    assert pair.agent_pairs == {"bad": "good"} and pair.shared_units == 10
    m = pair.metrics["strict_rate"]
    assert m.delta == pytest.approx(0.8) and m.direction == "improved"
    assert [(x.agent, x.task) for x in pair.left_out] == [("good", "solo")]


def test_comparison_round_trips_through_its_json(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(4)]
    base = _run(tmp_path / "base", set(tasks), tasks)
    cmp = compare_scores(score_run(base), score_run(base), thresholds=[Threshold.parse("strict_rate.lower<-0.5")])
    data = cmp.dump()
    assert data["schema"] == "assay.compare/1" and data["checks"][0]["reads"] == "ci.lower"
    assert Comparison.model_validate(data) == cmp


@pytest.mark.parametrize("text", ["strict_rate<<1", "nonsense<0.1", "strict_rate", "", "strict_rate.middle<0"])
def test_bad_threshold_is_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        Threshold.parse(text)


def test_cli_compare_exit_codes(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(12)]
    base = _run(tmp_path / "base", set(tasks), tasks)
    cand = _run(tmp_path / "cand", set(), tasks)
    bad = assay("compare", str(base), str(cand), "--fail-if", "strict_rate<-0.05")
    assert bad.returncode == 1, bad.stderr
    assert "REGRESSION" in bad.stdout and bad.stdout.startswith("note: baseline: NOT ISOLATED")
    assert "reads delta" in bad.stdout
    ok = assay("compare", str(base), str(base), "--fail-if", "strict_rate<-0.05", "--json")
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["regressed"] is False
    usage = assay("compare", str(base), str(cand), "--fail-if", "bogus>1")
    assert usage.returncode == 2


def test_cli_compare_nothing_to_compare_exits_5(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"t0"}, ["t0"], agent="old")
    cand = _run(tmp_path / "cand", {"t0"}, ["t0"], agent="new")
    r = assay("compare", str(base), str(cand))
    assert r.returncode == 5, r.stderr
    assert "--pair" in r.stderr and "NOTHING COMPARED" in r.stderr
    other = _run(tmp_path / "other", {"x"}, ["x"], agent="old")
    r2 = assay("compare", str(base), str(other), "--fail-if", "strict_rate<-0.05")
    assert r2.returncode == 5 and "no (task, variant, agent) unit" in r2.stderr
    assert assay("compare", str(base), str(cand), "--pair", "old=new").returncode == 0


def test_security_gate_threshold_is_a_listed_check(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"t0", "t1"}, ["t0", "t1"])
    rs = [attempt("t0", "ops", "a", 1, "pass", incidents=[{"type": "secret_leak", "severity": "critical"}]),
          attempt("t1", "code", "a", 1, "pass")]
    cand = write_run(tmp_path / "cand", {"code": 1, "ops": 1}, rs).path
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("gate")])
    (check,) = cmp.checks
    assert (check.reads, check.tripped) == ("gate", True) and "FAILED" in check.why
    assert cmp.regressed and cmp.security.candidate == "FAILED"
    r = assay("compare", str(base), str(cand), "--fail-if", "gate")
    assert r.returncode == 1 and "gate: candidate security gate FAILED" in r.stderr
