"""Reports withhold a held-out task's details (prompt, trace, per-trial rows, incident evidence)
and still count it in every figure (tests/heldout_run.py plants the markers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.records.scores import GateIncident
from assay.report import build_report
from assay.report.heldout import task_label, withhold
from assay.score import score_run
from tests.heldout_run import MARKS, OPEN_MARK, held_out_run

HELD_TRIAL = "held1.base.echoer.r1"
OPEN_TRIAL = "open1.base.echoer.r1"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return held_out_run(tmp_path_factory.mktemp("heldout"))


def test_the_run_directory_holds_the_markers_and_the_manifest_the_flag(run: Path) -> None:
    raw = (run / "trials" / HELD_TRIAL / "trace.jsonl").read_text()
    assert all(m in raw for m in MARKS)  # the evidence is kept where it belongs
    manifest = json.loads((run / "manifest.json").read_text())
    assert {t["id"]: t["held_out"] for t in manifest["tasks"]} == {"open1": False, "held1": True}


@pytest.mark.parametrize("fmt", ["html", "md", "json"])
def test_no_report_shows_a_held_out_detail(run: Path, fmt: str) -> None:
    text = build_report(run, fmt)
    assert not [m for m in MARKS if m in text]
    assert HELD_TRIAL not in text  # no per-trial row, no trial section, no timeline, no input file name
    if fmt == "html":
        assert OPEN_MARK in text and f'id="trial-{OPEN_TRIAL}"' in text  # details are shown where they may be
    if fmt != "json":
        assert "1 held-out task(s) (1 trial(s)) are counted" in text


def test_the_held_out_task_still_counts_in_the_figures(run: Path) -> None:
    doc = json.loads(build_report(run, "json"))["score"]
    assert (doc["agents"]["echoer"]["passes"], doc["agents"]["echoer"]["scored"]) == (2, 2)
    assert {t["task"]: t["passes"] for t in doc["tasks"]} == {task_label("held1"): 1, "open1": 1}
    assert {t["task"]: t["trial_ids"] for t in doc["tasks"]}[task_label("held1")] == []
    assert [t["trial_id"] for t in doc["trials"]] == [OPEN_TRIAL]
    assert doc["agents"] == score_run(run).dump()["agents"]  # aggregates untouched


def test_incident_evidence_of_a_held_out_trial_becomes_a_digest(run: Path) -> None:
    doc = score_run(run)
    planted = GateIncident(type="secret_leak", severity="critical", summary=f"leaked {MARKS[1]}",
                           evidence={"text": MARKS[0]}, trial_id=HELD_TRIAL)
    doc = doc.model_copy(update={"security": doc.security.model_copy(update={"incidents": [planted]})})
    shown = withhold(doc, frozenset({"held1"})).dump()
    assert not [m for m in MARKS if m in json.dumps(shown)]
    inc = shown["security"]["incidents"][0]
    assert inc["type"] == "secret_leak" and set(inc["evidence"]) == {"sha256"}
