"""An import's per-task flags (what was approximated, what could not map) are shown with the
results: in the score document, and in the Markdown and HTML reports from one table function,
escaped, and never for a held-out task."""

from __future__ import annotations

import json
from pathlib import Path

from assay.cli.main import main
from assay.report import build_report
from assay.report.deviations import deviation_rows
from assay.score import score_run
from tests.conftest import write_suite, write_task

FLAGS = ["FROM ubuntu:24.04 mapped to debian:bookworm <b>", "could not map: tests/test.sh fetches | uv"]


def _run(tmp_path: Path) -> Path:
    s = write_suite(tmp_path / "suite")
    for tid, extra in (("open1", {}), ("held1", {"held_out": True})):
        write_task(s, tid, task={"category": "code", "deviations": [*FLAGS, f"secret flag of {tid}"],
                                 "budget": {"wall_time_s": 60}, **extra,
                                 "predicates": [{"id": "f", "kind": "file_exists", "path": "out.txt"}]},
                   solution="echo done > out.txt\n")
    out = tmp_path / "run"
    assert main(["run", str(s), "-a", "oracle", "--sandbox", "host", "-q", "-o", str(out)]) == 0
    return out


def test_flags_reach_the_score_document_and_every_report(tmp_path: Path) -> None:
    run = _run(tmp_path)
    doc = score_run(run)
    assert doc.deviations["open1"][:2] == FLAGS
    assert deviation_rows(doc)[:2] == [("held1", "approximated", FLAGS[0]), ("held1", "could not map", FLAGS[1][15:])]
    md = build_report(run, "md")
    assert "## How tasks were read" in md
    assert "| open1 | could not map | tests/test.sh fetches \\| uv |" in md
    html = build_report(run, "html")
    assert '<section id="deviations">' in html and "debian:bookworm &lt;b&gt;" in html and "bookworm <b>" not in html
    score = json.loads(build_report(run, "json"))["score"]
    assert score["deviations"]["open1"][2] == "secret flag of open1"
    for text in (md, html, json.dumps(score)):  # a held-out task's flags would name it
        assert "secret flag of held1" not in text


def test_no_section_when_every_task_was_read_as_declared(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "o"}]},
               solution="touch o\n")
    assert main(["run", str(s), "-a", "oracle", "--sandbox", "host", "-q", "-o", str(tmp_path / "r")]) == 0
    assert "How tasks were read" not in build_report(tmp_path / "r", "md")
    assert 'id="deviations"' not in build_report(tmp_path / "r", "html")


def test_an_images_deviations_are_shown_beside_the_imports_once() -> None:
    """A hand-written task's ``FROM python:3.11`` mapping lives in its image record
    (``tasks[].environment.deviations``): the report shows it too, and an import that already
    flagged the same mapping is not shown twice."""
    from assay.records.manifest import TaskRecord
    from assay.score.engine import task_deviations
    from assay.spec.environment import EnvironmentRecord

    mapping = "FROM python:3.11-slim mapped to debian:bookworm with Debian's python3"
    def task(tid: str, own: list[str], env: list[str] | None) -> TaskRecord:
        return TaskRecord(id=tid, category="c", version="1", digest="d", files={}, prompt_sha256="p",
                          budget={"wall_time_s": 60}, risk="low", tools=[], variants=[], deviations=own,
                          environment=None if env is None else EnvironmentRecord(
                              image=f"{tid}@sha256:" + "0" * 64, rootfs_sha256="sha256:0", deviations=env))
    tasks = [task("hand", [], [mapping]), task("imported", [mapping, "could not map: x"], [mapping]),
             task("plain", [], []), task("host", [], None)]
    assert task_deviations(tasks) == {"hand": [mapping], "imported": [mapping, "could not map: x"]}


def test_a_json_report_file_withholds_held_out_rows_from_its_side_file(tmp_path: Path) -> None:
    """The rows beside a JSON report are the score's own, copied whole, only when nothing is
    withheld; a held-out task's rows never reach the file, and each file's digest is its bytes'."""
    import hashlib

    from assay.report import write_report

    run = _run(tmp_path)
    path = write_report(run, "json", out=tmp_path / "out" / "r.json")
    side = path.with_name("r.trials.jsonl")
    info = json.loads(path.read_text())["score"]["trials_file"]
    rows = [json.loads(x)["row"]["trial_id"] for x in side.read_bytes().splitlines()]
    assert rows == ["open1.base.oracle.r1"] and info["rows"] == 1
    assert info["sha256"] == hashlib.sha256(side.read_bytes()).hexdigest()
    assert b"held1" not in side.read_bytes()
    manifest = run / "manifest.json"  # the same run with nothing held out: every row, copied with its evidence
    manifest.write_text(manifest.read_text().replace('"held_out": true', '"held_out": false'))
    from assay.store.rundir import RunDir

    RunDir.open(run).seal("manifest.json")
    path = write_report(run, "json", out=tmp_path / "out" / "r.json")
    info = json.loads(path.read_text())["score"]["trials_file"]
    lines = [json.loads(x) for x in side.read_bytes().splitlines()]
    assert sorted(x["row"]["trial_id"] for x in lines) == ["held1.base.oracle.r1", "open1.base.oracle.r1"]
    assert all(x["results"] for x in lines) and info["rows"] == 2
    assert info["sha256"] == hashlib.sha256(side.read_bytes()).hexdigest()
