"""The report's judge section: a judge's calibration figures next to the verdicts it gave in the
run, the same in HTML, Markdown and JSON; a judge not calibrated for the run's model is shown as
uncalibrated and none of its verdicts count."""

from __future__ import annotations

import json
from pathlib import Path

from assay.judge.gate import read_record
from assay.report import build_report
from assay.run.runner import RunOptions, start_run
from tests.judge.test_calibrate import faithful
from tests.judge.test_judge_run import judged_suite


def _run(suite: Path, out: Path, judge_model: str) -> Path:
    start_run(RunOptions(suite=suite, agents=["oracle", "nop"], out=out, judge_model=judge_model))
    return out


def test_the_judge_section_shows_the_calibration_beside_the_runs_verdicts(tmp_path: Path, fake_judge) -> None:
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    record = read_record(suite / "tasks" / "explain-refusal" / "verify" / "calibration.json")
    run = _run(suite, tmp_path / "run", fj.model_arg)

    doc = json.loads(build_report(run, "json"))
    [judge] = doc["judges"]
    assert (judge["judge"], judge["model"], judge["mode"], judge["calibration"]) == \
        ("reasons", "judge-model", "pairwise", ["calibrated"])
    assert judge["agreement"] == record.agreement.model_dump(mode="json")
    by_agent = {v["agent"]: v for v in judge["verdicts"]}
    assert by_agent["oracle"]["verdict"] == "tie" and by_agent["oracle"]["held"] and by_agent["oracle"]["counted"]
    assert by_agent["oracle"]["answer_chars"] > 20
    assert by_agent["nop"]["answer_chars"] is None and not by_agent["nop"]["held"]  # no answer to judge

    html = build_report(run, "html")
    section = html[html.index("<h2 id='judges'>"):]
    assert "calibration: calibrated" in section and "class='warn'" not in section.split("<h2", 2)[1]
    assert f"<th>calibration: Cohen&#x27;s kappa</th><td>{record.agreement.cohen_kappa:.3f}</td>" in section
    assert "<th>counted (calibrated)</th><td>2, held 1 (50.0%)</td>" in section
    assert 'data-figure="judge-length-0"' in section and section.count('class="pt"') == 1  # one judged answer

    md = build_report(run, "md")
    assert "## Judge: reasons v" in md and "Calibration: **calibrated**" in md
    assert f"| calibration: Cohen's kappa | {record.agreement.cohen_kappa:.3f} |" in md


def test_a_judge_not_calibrated_for_the_runs_model_is_shown_uncalibrated(tmp_path: Path, fake_judge) -> None:
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    run = _run(suite, tmp_path / "run", fj.model_arg.replace("#judge-model", "#another-judge"))
    doc = json.loads(build_report(run, "json"))
    [judge] = doc["judges"]
    assert judge["calibration"] == ["uncalibrated (stale)"]
    oracle = next(v for v in judge["verdicts"] if v["agent"] == "oracle")
    # the judge was asked and its verdict is shown, but it did not count: the oracle fails
    assert oracle["verdict"] == "tie" and not oracle["counted"] and not oracle["held"]
    assert {t["agent"]: t["end_state"] for t in doc["score"]["trials"]}["oracle"] == "fail"
    html = build_report(run, "html")
    assert "<p class='warn'>calibration: uncalibrated (stale)</p>" in html
    assert "<th>shown as uncalibrated (not counted)</th><td>2</td>" in html  # the oracle's and nop's
    assert "<th>counted (calibrated)</th><td>0, held 0 (n/a)</td>" in html


def test_a_run_without_judges_has_no_judge_section(calc_suite: Path, tmp_path: Path) -> None:
    start_run(RunOptions(suite=calc_suite, agents=["oracle"], out=tmp_path / "run", sandbox="host"))
    assert json.loads(build_report(tmp_path / "run", "json"))["judges"] == []
    assert "id='judges'" not in build_report(tmp_path / "run", "html")
