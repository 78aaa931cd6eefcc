"""A run with a judge predicate end to end (bwrap sandbox, oracle and nop agents): the judge
model behind its own gateway decides beside the deterministic checks, its key never lands in
evidence, and a suite with judge predicates but no judge model is refused before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.judge.calibrate import calibrate_files
from assay.run.runner import RunOptions, start_run
from tests.conftest import write_suite, write_task
from tests.judge.test_calibrate import faithful, write_set


def judged_suite(tmp: Path, model_arg: str) -> Path:
    (tmp / "calib").mkdir()
    judge_file, set_file = write_set(tmp / "calib")
    record = calibrate_files(judge_file, set_file, model_arg).model_dump_json(by_alias=True)
    s = write_suite(tmp / "suite", categories=[{"id": "explain", "weight": 1}])
    write_task(s, "explain-refusal", task={
        "category": "explain", "outputs": ["answer.md"], "budget": {"wall_time_s": 60},
        "predicates": [
            {"id": "answered", "kind": "file_exists", "path": "answer.md"},
            {"id": "quality", "kind": "judge", "judge": "judge.yaml", "calibration": "calibration.json",
             "target": "file:answer.md", "reference": "reference.md"},
        ]},
        prompt="Explain to the user why the taxi cannot be recorded; write it to answer.md.",
        hidden={"reference.md": "I can't record the taxi because the amount is missing."},
        verify={"judge.yaml": judge_file.read_text(), "calibration.json": record},
        solution="printf 'I will not record the taxi yet because the date is missing; which day was it?' > answer.md\n")
    return s


def test_judged_task_runs_end_to_end(tmp_path: Path, fake_judge, monkeypatch) -> None:
    import assay.gateway.service as gateway_service

    keys: list[str] = []

    def known_key() -> str:  # every gateway key of this run, so evidence can be searched for them
        keys.append(f"sk-assay-judgetest{len(keys):04d}{'0' * 12}")
        return keys[-1]

    monkeypatch.setattr(gateway_service, "new_key", known_key)
    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    calls_before = fj.calls
    out = start_run(RunOptions(suite=suite, agents=["oracle", "nop"], out=tmp_path / "run", judge_model=fj.model_arg))
    by_agent = {r.agent: r for r in out.results}
    oracle = by_agent["oracle"]
    assert oracle.end_state.value == "pass", [(p.id, p.evidence) for p in oracle.predicates]
    quality = next(p for p in oracle.predicates if p.id == "quality")
    assert quality.evidence["calibration"] == "calibrated" and quality.evidence["verdict"] == "tie"
    nop = by_agent["nop"]
    assert nop.end_state.value == "fail"
    assert not next(p for p in nop.predicates if p.id == "quality").passed  # no answer at all
    assert fj.calls - calls_before == 2  # one judged answer, both orders; nop's missing answer was not sent
    assert out.manifest.judge is not None and out.manifest.judge.model == "judge-model"
    assert keys, "the judge's gateway session has a key of its own"
    leaked = [p for p in (tmp_path / "run").rglob("*") if p.is_file() and any(k.encode() in p.read_bytes() for k in keys)]
    assert leaked == []


def test_suite_with_judges_needs_a_judge_model(tmp_path: Path, fake_judge) -> None:
    suite = judged_suite(tmp_path, fake_judge(faithful).model_arg)
    with pytest.raises(UsageError, match="--judge-model"):
        start_run(RunOptions(suite=suite, agents=["oracle"], out=tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_validate_checks_judged_suites_with_their_judge_model(tmp_path: Path, fake_judge) -> None:
    from assay.run.validate import validate_suite

    fj = fake_judge(faithful)
    suite = judged_suite(tmp_path, fj.model_arg)
    with pytest.raises(UsageError, match="--judge-model"):
        validate_suite(suite)
    report = validate_suite(suite, judge_model=fj.model_arg)
    assert report.ok, [v.problems for v in report.verdicts]
    assert report.verdicts[0].trust_summary == "state:1 model_judged:1"


def test_validate_refuses_a_judge_not_calibrated_for_the_model(tmp_path: Path, fake_judge) -> None:
    from assay.run.validate import validate_suite

    calibrated_for = fake_judge(faithful)
    suite = judged_suite(tmp_path, calibrated_for.model_arg)
    other = fake_judge(faithful)  # the same answers from another model: the calibration does not carry over
    report = validate_suite(suite, judge_model=other.model_arg.replace("judge-model", "other-judge"))
    [v] = report.verdicts
    problems = [p for p in v.problems if p.startswith("judge predicate 'quality'")]
    assert problems and "uncalibrated (stale)" in problems[0] and "assay judge calibrate" in problems[0]
    assert "verify/judge.yaml" in problems[0] and "-o verify/calibration.json" in problems[0]
