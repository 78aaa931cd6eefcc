"""Score versions and integrity: never overwrite, refuse tampered evidence, through the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.records.trial_file import iter_inputs
from assay.score import read_score, score_files, write_score
from assay.store.integrity import verify_run
from tests.conftest import cli_timeout
from tests.score.synth import attempt, write_run


def assay(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout())


@pytest.fixture
def run(tmp_path: Path) -> Path:
    rs = [attempt("t1", "code", "a", 1, "pass"), attempt("t1", "code", "a", 2, "fail"),
          attempt("t2", "code", "a", 1, "pass")]
    return write_run(tmp_path / "run", {"code": 1}, rs).path


def test_rescoring_keeps_every_version(run: Path) -> None:
    p1 = write_score(run)
    before = p1.read_bytes()
    p2 = write_score(run)
    assert [p.name for p in score_files(run)] == ["score-0001.json", "score-0002.json"]  # each with its side file
    assert p1.read_bytes() == before
    doc = json.loads(p2.read_text())
    assert doc["score_version"] == 2 and doc["scorer_version"] and len(doc["rules_digest"]) == 64
    assert doc["inputs"]["results"] == {} and doc["inputs"]["result_files"] == 3  # listed in the side file:
    assert sorted(p for kind, p, _ in iter_inputs(read_score(p2)) if kind == "result") == sorted(
        p.relative_to(run).as_posix() for p in run.glob("trials/*/attempts/*/result.json"))
    # score files are sealed: the run still verifies, and editing a score is caught
    assert verify_run(run).ok
    p1.write_text(p1.read_text().replace('"score_version": 1', '"score_version": 7'))
    assert any("score-0001.json" in p for p in verify_run(run).problems)


def test_a_taken_number_is_skipped_not_overwritten(run: Path) -> None:
    (run / "scores").mkdir(exist_ok=True)
    (run / "scores" / "score-0001.json").write_text("{}")  # e.g. a concurrent scorer got there first
    p = write_score(run)
    assert p.name == "score-0002.json"
    assert (run / "scores" / "score-0001.json").read_text() == "{}"


def test_a_file_numbered_in_digits_of_another_script_is_no_score_version(run: Path) -> None:
    """``\\d`` matches Arabic-Indic digits and ``int`` reads them: a file planted as
    ``score-١٢٣٤.json`` was the latest version (1234), what the viewer showed, and the next score
    was numbered 1235. It is no score version: the next one is 0001, and the viewer's latest is that."""
    (run / "scores").mkdir(exist_ok=True)
    planted = run / "scores" / "score-\u0661\u0662\u0663\u0664.json"
    planted.write_text("{}")
    assert score_files(run) == []
    p = write_score(run)
    assert p.name == "score-0001.json" and score_files(run) == [p]
    assert planted.read_text() == "{}"


def test_modified_result_is_refused(run: Path) -> None:
    res = next(run.glob("trials/t1.base.a.r2/attempts/1/result.json"))
    res.write_text(res.read_text().replace('"fail"', '"pass"'))
    with pytest.raises(IntegrityError, match="modified"):
        write_score(run)
    assert score_files(run) == []


def test_cli_score_and_exit_3_on_deleted_result(run: Path) -> None:
    ok = assay("score", str(run))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0].startswith("WARNING NOT ISOLATED")
    assert "score version 1 written" in ok.stdout
    next(run.glob("trials/t2.base.a.r1/attempts/1/result.json")).unlink()
    bad = assay("score", str(run))
    assert bad.returncode == 3
    assert "deleted" in " ".join(bad.stderr.split())
    assert [p.name for p in score_files(run)] == ["score-0001.json"]


def test_cli_score_not_a_run_dir(tmp_path: Path) -> None:
    r = assay("score", str(tmp_path))
    assert r.returncode == 2 and "not a run directory" in " ".join(r.stderr.split())


def test_an_edited_older_score_is_verifys_finding_not_an_input_of_the_next(run: Path) -> None:
    """A score version is derived: no score, report or export reads one back as evidence, so hashing
    every older one (765 MB of rows each at 10^6 trials) on every scoring would make each new score
    slower than the last. `assay verify` still names an edited one; a new score of the same evidence
    is written with the same figures; an edited label file (an input of the score) still refuses it."""
    from assay.report.export import ExportOptions, export_run

    first = write_score(run)
    rows = first.with_name("score-0001.trials.jsonl")
    rows.write_bytes(rows.read_bytes().replace(b'"end_state":"fail"', b'"end_state":"pass"'))
    first.write_text(first.read_text().replace('"score_version": 1', '"score_version": 7'))
    problems = verify_run(run).problems
    assert any("score-0001.trials.jsonl: modified" in p for p in problems)
    assert any("score-0001.json: modified" in p for p in problems)
    second = write_score(run)
    assert second.name == "score-0002.json"
    assert json.loads(second.read_text())["agents"] == json.loads(write_score(run).read_text())["agents"]
    out = run.parent / "export.jsonl"
    export_run(run, ExportOptions(fmt="jsonl", out=out))
    assert len(out.read_text().splitlines()) == 3
    # a label file is an input of the score (its audited rates): edited, it still refuses the score
    from assay.score.labels import write_labels

    labels = write_labels(run, {"t1.base.a.r1": False}, by="a reviewer")
    labels.write_text(labels.read_text().replace("false_pass", "true_pass"))
    with pytest.raises(IntegrityError, match="labels-0001.json: modified"):
        write_score(run)
