"""CI outputs through the real CLI: JUnit XML (one testcase per trial), the Markdown summary
(gate and flipped tasks first), GITHUB_STEP_SUMMARY, and the exit codes a pipeline gates on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

from tests.conftest import cli_timeout
from tests.score.synth import attempt, trial_id, write_run


def assay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"} | (env or {})
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout(), env=full)


def _every_state(path: Path) -> Path:
    rs = [attempt("ok", "code", "a", 1, "pass"), attempt("bad", "code", "a", 1, "fail"),
          attempt("slow", "code", "a", 1, "timeout"), attempt("broke", "code", "a", 1, "infra_error", reason="sandbox"),
          attempt("nope", "code", "a", 1, "skipped", reason="unsupported")]
    return write_run(path, {"code": 1}, rs, planned_extra=[trial_id("lost", "base", "a", 1)]).path


def test_junit_has_one_testcase_per_trial_with_the_right_outcome(tmp_path: Path) -> None:
    run = _every_state(tmp_path / "r")
    junit = tmp_path / "out" / "junit.xml"
    proc = assay("score", str(run), "--junit", str(junit))
    assert proc.returncode == 4, proc.stderr  # 2 infra of 5 scored: above the default --max-infra-rate
    root = ET.parse(junit).getroot()
    (suite,) = root.findall("testsuite")
    cases = {tc.get("name"): tc for tc in suite.findall("testcase")}
    assert len(cases) == 7  # six trials and the agent's security gate
    assert [c.tag for c in cases.pop("security gate")] == []  # no incident: the gate passed
    outcome = {name: [child.tag for child in tc] for name, tc in cases.items()}
    assert outcome == {trial_id("ok", "base", "a", 1): [], trial_id("bad", "base", "a", 1): ["failure"],
                       trial_id("slow", "base", "a", 1): ["failure"], trial_id("broke", "base", "a", 1): ["error"],
                       trial_id("nope", "base", "a", 1): ["skipped"], trial_id("lost", "base", "a", 1): ["error"]}
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("7", "2", "2", "1")
    assert "missing" in cases[trial_id("lost", "base", "a", 1)].find("error").get("message")


def test_summary_markdown_and_github_step_summary(tmp_path: Path) -> None:
    tasks = [f"t{i}" for i in range(6)]
    base = write_run(tmp_path / "base", {"code": 1}, [attempt(t, "code", "a", 1, "pass") for t in tasks],
                     run_id="base").path
    cand = write_run(tmp_path / "cand", {"code": 1},
                     [attempt(t, "code", "a", 1, "fail" if t == "t3" else "pass") for t in tasks], run_id="cand").path
    step = tmp_path / "step.md"
    step.write_text("earlier step\n")
    md = tmp_path / "summary.md"
    proc = assay("compare", str(base), str(cand), "--fail-if", "strict_rate<-0.1", "--summary-md", str(md),
                 "--junit", str(tmp_path / "j.xml"), env={"GITHUB_STEP_SUMMARY": str(step)})
    assert proc.returncode == 1, proc.stderr
    text = md.read_text()
    assert text.index("CI gate: FAILED") < text.index("Flipped tasks") < text.index("| agent | capability")
    assert "| t3 | base | a | 100.0% | 0.0% | regressed |" in text
    assert "NOT ISOLATED" in text.splitlines()[0]
    assert step.read_text() == "earlier step\n" + text  # appended, never overwritten
    root = ET.parse(tmp_path / "j.xml").getroot()
    checks = [s for s in root.findall("testsuite") if s.get("name", "").startswith("compare")][0]
    assert [tc.find("failure") is not None for tc in checks.findall("testcase")] == [False, True, True]


def test_score_exit_codes_for_infra_and_nothing_scored(tmp_path: Path) -> None:
    run = _every_state(tmp_path / "r")  # 2 infra (one missing) of 5 scored
    ok = assay("score", str(run), "--max-infra-rate", "0.5")
    assert ok.returncode == 0, ok.stderr
    over = assay("score", str(run), "--max-infra-rate", "0.2")
    assert over.returncode == 4
    assert "40.0%" in over.stderr and "--max-infra-rate 0.2" in over.stderr
    assert "score version 2 written" in over.stdout  # the score itself is still written and shown
    skipped = write_run(tmp_path / "s", {"code": 1}, [attempt("t", "code", "a", 1, "skipped")]).path
    none = assay("score", str(skipped), "--junit", str(tmp_path / "s.xml"))
    assert none.returncode == 5 and "zero scored trials" in none.stderr
    assert (tmp_path / "s.xml").exists()
    bad = assay("score", str(run), "--max-infra-rate", "2")
    assert bad.returncode == 2


def test_junit_names_a_failed_security_gate_as_a_test_case_with_timestamp_and_hostname(tmp_path: Path) -> None:
    leak = {"type": "secret_leak", "severity": "high", "summary": "canary in stdout"}
    rs = [attempt("ok", "code", "a", 1, "pass", incidents=[leak]), attempt("ok", "code", "b", 1, "pass")]
    run = write_run(tmp_path / "r", {"code": 1}, rs).path
    junit = tmp_path / "junit.xml"
    proc = assay("score", str(run), "--junit", str(junit))
    assert proc.returncode == 0, proc.stderr  # a passing trial with a leak: every trial passed, the gate did not
    suites = {s.get("name").rsplit(".", 1)[1]: s for s in ET.parse(junit).getroot().findall("testsuite")}
    gate = {a: s.find("testcase[@name='security gate']") for a, s in suites.items()}
    failure = gate["a"].find("failure")
    assert failure is not None and "FAILED" in failure.get("message") and "secret_leak" in failure.text
    assert gate["b"].find("failure") is None  # the other agent's gate passed: still a test case, passing
    assert (suites["a"].get("tests"), suites["a"].get("failures")) == ("2", "1")
    for s in suites.values():
        assert s.get("hostname") and s.get("timestamp")
        from datetime import datetime

        datetime.fromisoformat(s.get("timestamp"))  # ISO 8601, as JUnit consumers parse it


def test_nothing_compared_output_never_says_no_threshold_tripped(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", {"code": 1}, [attempt("t1", "code", "a", 1, "pass")], run_id="base").path
    cand = write_run(tmp_path / "cand", {"code": 1}, [attempt("t2", "code", "a", 1, "pass")], run_id="cand").path
    proc = assay("compare", str(base), str(cand), "--junit", str(tmp_path / "j.xml"))
    assert proc.returncode == 5, proc.stderr
    assert "no threshold tripped" not in proc.stdout
    assert proc.stdout.rstrip().splitlines()[-1].startswith("NOTHING COMPARED")


def test_a_single_pair_says_no_interval_everywhere(tmp_path: Path) -> None:
    base = write_run(tmp_path / "base", {"code": 1}, [attempt("t1", "code", "a", 1, "fail", diagnostic=40.0)],
                     run_id="base").path
    cand = write_run(tmp_path / "cand", {"code": 1}, [attempt("t1", "code", "a", 1, "pass")], run_id="cand").path
    md = tmp_path / "s.md"
    text = assay("compare", str(base), str(cand), "--summary-md", str(md))
    assert text.returncode == 0, text.stderr
    assert "no interval (n = 1)" in text.stdout and "no interval (n = 1)" in md.read_text()
    assert "[+1, +1]" not in text.stdout + md.read_text() and "[+1.0000, +1.0000]" not in text.stdout
    html = assay("report", str(cand), "--compare", str(base), "-o", "-")
    assert html.returncode == 0 and "no interval (n = 1)" in html.stdout
    from assay.score import score_run
    from assay.score.compare import compare_scores

    cmp = compare_scores(score_run(base), score_run(cand))
    assert all(m.ci is None and not m.moved_beyond_noise for m in cmp.metrics.values())  # never "beyond noise"
