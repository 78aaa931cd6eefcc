"""A held-out task's id can itself tell the case, so no surface outside the run directory shows
it: not the report (task rows, incidents, judge verdicts), not ``assay export``, not the JUnit file
or the CI summary. Its rows stay, counted, under digest labels (report/heldout.py). The held-out
task's id and prompt carry markers that must be absent; the open task's id marker must appear."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.records.scores import GateIncident
from assay.report import build_report
from assay.report.ci import junit_xml, summary_markdown, write_ci_outputs
from assay.report.export import iter_rows
from assay.report.heldout import PREFIX, task_label, trial_label, withhold, withhold_judges
from assay.report.judges import judges_html, judges_md
from assay.report.trials import anchor
from assay.score import score_run
from assay.spec.judge import JudgeSummary, JudgeVerdict
from tests.conftest import assay_env, cli_timeout
from tests.heldout_run import HELD_ID_MARK, MARKED_IDS, MARKS, OPEN_ID_MARK, held_out_run

OPEN, HELD = MARKED_IDS
SECRETS = (HELD_ID_MARK, *MARKS)


def leaked(text: str) -> list[str]:
    return [m for m in SECRETS if m in text]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return held_out_run(tmp_path_factory.mktemp("heldout-ids"), ids=MARKED_IDS)


def test_the_run_directory_keeps_the_id(run: Path) -> None:
    assert HELD in (run / "manifest.json").read_text()  # the evidence holds it; nothing else may


@pytest.mark.parametrize("fmt", ["html", "md", "json"])
def test_no_report_shows_a_held_out_id(run: Path, fmt: str) -> None:
    text = build_report(run, fmt)
    assert leaked(text) == [], fmt
    if fmt != "md":  # (the Markdown report has no per-task rows)
        assert OPEN_ID_MARK in text
        assert task_label(HELD) in text  # its task row is there, counted, under its digest


def test_task_rows_and_incidents_are_counted_under_digests(run: Path) -> None:
    doc = score_run(run)
    planted = GateIncident(type="secret_leak", severity="critical", summary="x", evidence={},
                           trial_id=f"{HELD}.base.echoer.r1")
    doc = doc.model_copy(update={"security": doc.security.model_copy(update={"incidents": [planted]})})
    shown = withhold(doc, frozenset({HELD}))
    assert leaked(json.dumps(shown.dump())) == []
    assert {t.task: t.passes for t in shown.tasks} == {OPEN: 1, task_label(HELD): 1}
    assert shown.security.incidents[0].trial_id == f"{task_label(HELD)}.base.echoer.r1"


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_counts_the_held_out_rows_under_digests(run: Path, fmt: str) -> None:
    from assay.report.export import ExportOptions, export_run

    out = run.parent / f"export.{fmt}"
    export_run(run, ExportOptions(fmt=fmt, out=out))
    text = out.read_text()
    assert leaked(text) == [] and OPEN_ID_MARK in text
    rows = [json.loads(x) for x in text.splitlines()] if fmt == "jsonl" else list(csv.DictReader(io.StringIO(text)))
    assert sorted(r["task_id"] for r in rows) == sorted([OPEN, task_label(HELD)])
    held = next(r for r in rows if r["task_id"].startswith(PREFIX))
    assert held["trial_id"] == trial_label(f"{HELD}.base.echoer.r1", frozenset({HELD}))
    assert str(held["strict_pass"]) in ("True", "true")  # the row still says what the scorer counts
    assert [r["task_id"] for r in iter_rows(run)] == [r["task_id"] for r in rows]


def test_junit_and_ci_summary_name_held_out_trials_by_digest(run: Path, tmp_path: Path) -> None:
    doc = score_run(run)
    junit, summary = tmp_path / "junit.xml", tmp_path / "summary.md"
    write_ci_outputs(doc, junit=junit, summary_md=summary, held=frozenset({HELD}))
    xml = junit.read_text()
    assert leaked(xml + summary.read_text()) == []
    assert OPEN_ID_MARK in xml and xml.count("<testcase") - xml.count('name="security gate"') == 2  # both trials
    assert trial_label(f"{HELD}.base.echoer.r1", frozenset({HELD})) in xml
    assert HELD_ID_MARK in junit_xml(doc) + summary_markdown(doc)  # the control: unmasked, it would leak


def test_the_cli_writes_a_masked_junit_file(run: Path, tmp_path: Path) -> None:
    junit = tmp_path / "cli-junit.xml"
    p = subprocess.run([sys.executable, "-m", "assay.cli.main", "score", str(run), "--junit", str(junit)],
                       capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert p.returncode == 0, p.stderr
    assert leaked(junit.read_text() + p.stdout) == [] and OPEN_ID_MARK in junit.read_text()


def test_judge_verdicts_on_held_out_tasks_are_counted_under_digests() -> None:
    def verdict(task: str, chars: int, label: str) -> JudgeVerdict:
        return JudgeVerdict(trial_id=f"{task}.base.a.r1", task_id=task, agent="a", predicate="j", answer_chars=chars,
                            verdict=label, held=label == "A", counted=True)

    s = JudgeSummary(judge="j", version="1", model="m", mode="pairwise", calibration=["calibrated"],
                     verdicts=[verdict(OPEN, 10, "A"), verdict(HELD, 20, "B"), verdict(HELD, 30, "A")])
    (shown,) = withhold_judges([s], frozenset({HELD}))
    html, md = judges_html([shown]), "\n".join(judges_md([shown]))
    assert leaked(html + md) == [] and OPEN_ID_MARK in html
    assert (shown.counted, shown.held, len(shown.verdicts)) == (s.counted, s.held, 3)  # counted as before
    assert html.count(f'href="#{anchor("trial", OPEN)}') == 1 and 'href="#trial-held' not in html  # no link to
    # a withheld trial
    assert HELD_ID_MARK in judges_html([s])  # the control: unmasked, the plot names the task
