"""The run list's rows without a server, over real run directories (`assay run`, `assay score`): a
new row is built from its sealed files only and says it is still verifying; the full verification
then keeps it or turns it TAMPERED; a changed score version is TAMPERED at once; what a trial page
checks by itself; a row kept unverified is verified again by the next viewer."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from assay.store.rundir import REPORTS, RunDir
from assay.view.catalog import ROW_FILE, Catalog, RunRow, build_row, trial_problems
from tests.view.conftest import make_agent, make_suite, run_into


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("catalog")
    out = base / "runs"
    run_into(make_suite(base / "suite"), make_agent(base / "a", fixed=False), out / "good")
    return out


def copy(runs: Path, name: str) -> Path:
    dest = runs.parent / "copies" / name / name
    shutil.copytree(runs / "good", dest)
    shutil.rmtree(dest / REPORTS, ignore_errors=True)
    return dest


def test_a_new_row_is_verifying_until_the_full_check_turns_it_tampered(runs: Path) -> None:
    run = copy(runs, "edited-result")
    result = next(run.glob("trials/greet.*/attempts/1/result.json"))
    result.write_text(result.read_text().replace('"fail"', '"pass"') + " ")
    cat = Catalog(run.parent)
    row = cat._row(run.name)  # built, not queued: what the first open shows
    assert row is not None and row.status == "scored" and row.verifying and not row.verified
    assert not (run / REPORTS / ROW_FILE).exists()  # a row still to verify is never kept
    cat._verify(run.name)  # what the background thread does
    row = cat._row(run.name)
    assert row is not None and row.status == "tampered" and not row.verifying
    assert any(f.endswith("result.json") for f in row.tampered_files) and row.agents == []
    assert cat.found_tampered == {run.name}
    tid = result.parts[-4]
    assert any("result.json" in p for p in trial_problems(RunDir.open(run), tid))  # the trial page's own check


def test_an_intact_run_is_verified_and_kept_for_the_next_viewer(runs: Path) -> None:
    run = copy(runs, "intact")
    cat = Catalog(run.parent)
    assert cat.row(run.name).verifying  # type: ignore[union-attr]
    cat._verify(run.name)
    row = cat.row(run.name)
    assert row is not None and row.verified and not row.verifying and row.strict_rate is not None
    assert json.loads((run / REPORTS / ROW_FILE).read_text())["verified"] is True
    again = Catalog(run.parent).row(run.name)  # a new viewer reads the kept, verified row
    assert again is not None and again.verified and again.strict_rate == row.strict_rate
    tid = next(run.glob("trials/*")).name
    assert trial_problems(RunDir.open(run), tid) == []


def test_a_changed_score_version_or_manifest_is_tampered_at_once(runs: Path) -> None:
    run = copy(runs, "edited-score")
    score = sorted(run.glob("scores/score-*.json"))[-1]
    score.write_text(score.read_text().replace('"strict_rate": 0.5', '"strict_rate": 1.0') + "\n")
    row = build_row(run, run.name, full=False)
    assert row.status == "tampered" and row.tampered_files == [score.relative_to(run).as_posix()]
    assert row.agents == [] and not row.verifying
    run = copy(runs, "edited-manifest")
    (run / "manifest.json").write_text((run / "manifest.json").read_text() + " ")
    row = build_row(run, run.name, full=False)
    assert row.status == "tampered" and row.tampered_files == ["manifest.json"]


def test_a_viewer_that_ended_before_verifying_leaves_the_next_one_to_verify(runs: Path) -> None:
    run = copy(runs, "left-unverified")
    first = Catalog(run.parent)
    assert first._row(run.name).verifying  # type: ignore[union-attr]  # the viewer ended before verifying it
    (run / "trials" / next(run.glob("trials/*")).name / "trace.jsonl").write_text("{}\n")
    second = Catalog(run.parent)
    row = second.row(run.name)
    assert row is not None and row.verifying  # built and queued again (its check may end at once: not asked)
    row = _wait_verified(second, run.name)
    assert row.status == "tampered" and any(f.endswith("trace.jsonl") for f in row.tampered_files)


def _wait_verified(cat: Catalog, name: str) -> RunRow:
    deadline = time.monotonic() + 120
    while name in cat.pending():
        assert time.monotonic() < deadline, "the background verification never ended"
        time.sleep(0.02)
    row = cat._row(name)
    assert row is not None
    return row


def test_the_lists_summary_reads_what_the_typed_score_document_holds(runs: Path) -> None:
    from assay.score.versions import read_score, score_files
    from assay.view.score_summary import read_summary

    for f in score_files(runs / "good"):
        doc, got = read_score(f), read_summary(f)
        assert (got.score_version, got.security.gate, len(got.suspect_passes)) == \
            (doc.score_version, doc.security.gate, len(doc.suspect_passes))
        assert sorted(got.agents) == sorted(doc.agents) and doc.agents
        for name, a in doc.agents.items():
            s = got.agents[name]
            assert (s.strict_rate, tuple(s.strict_ci), s.security.gate, s.efficiency.total_cost_usd) == \
                (a.strict_rate, tuple(a.strict_ci), a.security.gate, a.efficiency.total_cost_usd)
