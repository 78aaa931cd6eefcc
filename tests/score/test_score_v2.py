"""The score document with its trials in a side file (``assay.score/2``) gives every figure the
scorer gave before (``assay.score/1``, trials inline), over seeded runs that cover what the scorer
folds; old score files still read, through the same one reader of trial rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from assay.errors import IntegrityError
from assay.records.scores import ScoreDocument
from assay.records.trial_file import iter_inputs, iter_trials, row_dict
from assay.score import read_score, score_run, write_score
from assay.store.integrity import verify_run
from tests.conftest import cli_timeout
from tests.score.v1_runs import RUNS, build

FIXTURES = Path(__file__).parent / "fixtures" / "score-v1"
#: what differs by design between two scorings of the same evidence
NOT_FIGURES = ("scored_at", "rules_digest", "scorer_version", "schema", "score_version", "trials", "trials_file",
               "inputs")


def figures(doc: ScoreDocument) -> dict[str, Any]:
    """Every figure of a document, wherever its rows and inputs are: the main body without what
    differs by design, the rows (without the fault facts assay.score/1 never listed), the task
    rows' trial ids regrouped from the rows, the evidence paths read and the result digests."""
    body = doc.dump()
    for k in NOT_FIGURES:
        body.pop(k, None)
    rows = [row_dict(r) for r in iter_trials(doc)]
    for r in rows:
        r.pop("fault")
    ids: dict[str, list[str]] = {}
    for r in rows:
        ids.setdefault(f"{r['agent']}/{r['task_id']}/{r['variant']}", []).append(r["trial_id"])
    for t in body["tasks"]:
        old = t.pop("trial_ids")
        assert not old or old == ids[f"{t['agent']}/{t['task']}/{t['variant']}"]
    inputs = sorted((kind, path, digest if kind == "result" else "") for kind, path, digest in iter_inputs(doc))
    return {"body": body, "rows": rows, "unit_trials": ids, "inputs": inputs}


@pytest.mark.parametrize("name", list(RUNS))
def test_every_figure_equals_the_old_scorers(tmp_path: Path, name: str) -> None:
    run = build(tmp_path / name, name)
    path = write_score(run)
    data = json.loads(path.read_text())
    assert data["schema"] == "assay.score/2" and data["trials"] == [] and data["inputs"]["results"] == {}
    assert data["trials_file"]["path"] == "score-0001.trials.jsonl"
    new = read_score(path)
    old = read_score(FIXTURES / f"{name}.json")
    assert old.schema_ == "assay.score/1" and old.trials and old.trials_file is None
    assert figures(new) == figures(old)
    assert new.inputs.results_read == len(old.inputs.results) > 0
    assert figures(score_run(run)) == figures(old)  # in memory, rows inline: the same figures


def test_the_side_file_is_sealed_evidence(tmp_path: Path) -> None:
    run = build(tmp_path / "r", "mixed")
    path = write_score(run)
    assert verify_run(run).ok
    side = path.with_name("score-0001.trials.jsonl")
    side.write_bytes(side.read_bytes().replace(b'"end_state":"fail"', b'"end_state":"pass"', 1))
    report = verify_run(run)
    assert not report.ok and any("score-0001.trials.jsonl" in str(p) for p in report.problems)


def test_a_damaged_side_file_line_is_named(tmp_path: Path) -> None:
    run = build(tmp_path / "r", "turns")
    path = write_score(run)
    side = path.with_name("score-0001.trials.jsonl")
    lines = side.read_bytes().splitlines(keepends=True)
    side.write_bytes(b"".join(lines[:2] + [b'{"row": 3}\n'] + lines[3:]))
    with pytest.raises(IntegrityError, match=r"score-0001.trials.jsonl:3: not a trial row"):
        list(iter_trials(read_score(path)))


def test_a_document_with_a_side_file_not_read_from_disk_says_so(tmp_path: Path) -> None:
    run = build(tmp_path / "r", "turns")
    doc = ScoreDocument.model_validate_json(write_score(run).read_bytes())
    with pytest.raises(IntegrityError, match="read it with read_score"):
        next(iter_trials(doc))


def test_two_versions_each_have_their_own_side_file(tmp_path: Path) -> None:
    run = build(tmp_path / "r", "turns")
    p1, p2 = write_score(run), write_score(run)
    assert [p.name for p in sorted((run / "scores").iterdir())] == [
        "score-0001.json", "score-0001.trials.jsonl", "score-0002.json", "score-0002.trials.jsonl"]
    assert figures(read_score(p1)) == figures(read_score(p2))


def test_score_json_prints_the_rows_inline(tmp_path: Path) -> None:
    import subprocess
    import sys

    run = build(tmp_path / "r", "turns")
    p = subprocess.run([sys.executable, "-m", "assay.cli.main", "score", str(run), "--json", "--max-infra-rate", "1"],
                       capture_output=True, text=True, timeout=cli_timeout())
    assert p.returncode == 0, p.stderr
    printed = json.loads(p.stdout)
    assert printed["trials_file"] is None
    assert printed["trials"] == [row_dict(r) for r in iter_trials(read_score(run / "scores" / "score-0001.json"))]
