"""Compare: shared subset only, paired deltas with intervals, CI gate exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.score import score_run
from assay.score.compare import Threshold, compare_scores
from tests.score.synth import attempt, write_run


def assay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True, timeout=120)


def _run(path: Path, passing: set[str], tasks: list[str], *, agent: str = "a", reps: int = 2, run_id: str = "r") -> Path:
    rs = [attempt(t, "code" if i % 2 else "ops", agent, r, "pass" if t in passing else "fail")
          for i, t in enumerate(tasks) for r in range(1, reps + 1)]
    return write_run(path, {"code": 1, "ops": 1}, rs, run_id=run_id).path


def test_regression_beyond_noise_trips_the_gate(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(16)]
    base = _run(tmp_path / "base", set(tasks), tasks + ["only_base"], run_id="base")
    cand = _run(tmp_path / "cand", set(tasks[:6]), tasks + ["only_cand"], run_id="cand")
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("strict_rate<-0.05")])
    m = cmp["metrics"]["strict_rate"]
    assert cmp["shared_units"] == 16
    assert {(x["task"], x["why"]) for x in cmp["left_out"]} == {
        ("only_base", "not in the candidate"), ("only_cand", "candidate unit with no paired baseline unit")}
    assert m["baseline"] == pytest.approx(1.0)  # numerator and denominator from the shared subset only
    assert m["delta"] == pytest.approx(-10 / 16)
    assert m["ci"][1] < 0 and m["p_sign_test"] < 0.01
    assert m["moved_beyond_noise"] and m["direction"] == "regressed"
    assert cmp["regressed"] and cmp["failed"]
    assert cmp["metrics"]["safe_rate"]["moved_beyond_noise"] is False


def test_identical_runs_do_not_move(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(8)]
    base = _run(tmp_path / "base", set(tasks[:4]), tasks)
    cand = _run(tmp_path / "cand", set(tasks[:4]), tasks)
    cmp = compare_scores(score_run(base), score_run(cand), thresholds=[Threshold.parse("strict_rate<-0.05")])
    assert not any(m["moved_beyond_noise"] for m in cmp["metrics"].values())
    assert not cmp["regressed"]


def test_single_agents_are_paired_by_role(tmp_path: Path) -> None:
    base = _run(tmp_path / "base", {"t0"}, ["t0", "t1"], agent="old")
    cand = _run(tmp_path / "cand", {"t0", "t1"}, ["t0", "t1"], agent="new")
    cmp = compare_scores(score_run(base), score_run(cand))
    assert cmp["agent_pairs"] == {"old": "new"} and cmp["shared_units"] == 2
    assert cmp["metrics"]["strict_rate"]["delta"] == pytest.approx(0.5)


@pytest.mark.parametrize("text", ["strict_rate<<1", "nonsense<0.1", "strict_rate", ""])
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
    ok = assay("compare", str(base), str(base), "--fail-if", "strict_rate<-0.05", "--json")
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["regressed"] is False
    usage = assay("compare", str(base), str(cand), "--fail-if", "bogus>1")
    assert usage.returncode == 2
