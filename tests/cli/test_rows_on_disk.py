"""What `assay run` prints and writes when it ends, and what `assay compare` gives, with the
score's trial rows streamed to a side file instead of held in memory (at 2x10^5 trials `compare`
held both runs' rows: 559 MiB): the same rows, the same comparison, the same JUnit and Markdown,
byte for byte, as the documents scored in memory give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli.outcome import score_finished_run
from assay.records.trial_file import iter_trials
from assay.report.ci import run_started, write_ci_outputs
from assay.report.heldout import held_out_of
from assay.score import score_run
from assay.score.compare import compare_scores
from assay.score.engine import score_figures
from tests.conftest import run_assay, write_suite, write_task

NO_STEP_SUMMARY = {"GITHUB_STEP_SUMMARY": ""}


def _suite(root: Path) -> Path:
    """Two tasks: the oracle passes both, nop fails the one with a check it cannot meet."""
    s = write_suite(root / "suite")
    write_task(s, "answer", task={"category": "code", "predicates": [
        {"id": "a", "kind": "file_contains", "path": "answer", "text": "42"}]},
        workspace={"README": "-\n"}, solution="echo 42 > answer\n")
    write_task(s, "readme", task={"category": "code", "predicates": [
        {"id": "r", "kind": "file_exists", "path": "README"}]}, workspace={"README": "-\n"})
    return s


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, Path]:
    """A baseline run, a candidate run made with --json, and one made with --junit and --summary-md
    (its rows streamed to a side file: no --json), in ``ci`` beside its two outputs."""
    root = tmp_path_factory.mktemp("rows")
    s = _suite(root)
    base = root / "base"
    r = run_assay("run", str(s), "--agent", "oracle", "--sandbox", "host", "-n", "2", "-q", "--out", str(base),
                  env=NO_STEP_SUMMARY)
    assert r.returncode == 0, r.stderr
    cand, ci = root / "cand", root / "ci"
    r = run_assay("run", str(s), "--agent", "oracle,nop", "--sandbox", "host", "-n", "3", "-q", "--out", str(cand),
                  "--json", env=NO_STEP_SUMMARY)
    assert r.returncode == 0, r.stderr
    printed = json.loads(r.stdout)
    made = run_assay("run", str(s), "--agent", "oracle,nop", "--sandbox", "host", "-n", "3", "-q", "--out",
                     str(ci / "run"), "--junit", str(ci / "run.xml"), "--summary-md", str(ci / "run.md"),
                     env=NO_STEP_SUMMARY)
    assert made.returncode == 0, made.stderr
    return base, cand, printed, ci


def _in_memory_outputs(run: Path, folder: Path, cmp=None) -> tuple[bytes, bytes]:  # noqa: ANN001 - a Comparison
    """The JUnit and Markdown written from the score held in memory, as before."""
    write_ci_outputs(score_run(run, verify=False), cmp, junit=folder / "mem.xml", summary_md=folder / "mem.md",
                     held=held_out_of(run), started_at=run_started(run))
    return (folder / "mem.xml").read_bytes(), (folder / "mem.md").read_bytes()


def test_the_runs_json_is_the_score_in_memory(two_runs) -> None:  # noqa: ANN001
    _base, cand, printed, _ci = two_runs
    score = printed["score"]
    in_memory = score_run(cand, verify=False).dump()
    assert score.get("trials_file") is None  # inline, no side file left to name
    assert len(score["trials"]) == 12 and len(score["inputs"]["results"]) == 12
    assert all(u["trial_ids"] for u in score["tasks"])
    score.pop("scored_at"), in_memory.pop("scored_at")
    assert score == in_memory


def test_the_runs_ci_outputs_are_those_of_the_score_in_memory(two_runs, tmp_path: Path) -> None:  # noqa: ANN001
    _base, _cand, _printed, ci = two_runs
    junit, markdown = _in_memory_outputs(ci / "run", tmp_path)
    assert (ci / "run.xml").read_bytes() == junit
    assert (ci / "run.md").read_bytes() == markdown
    assert junit.count(b"<testcase") == 12 + 2 and b"<failure" in junit  # a trial each, and a gate case per agent


def test_the_finished_runs_score_holds_no_row_in_memory(two_runs, tmp_path: Path) -> None:  # noqa: ANN001
    _base, cand, _printed, _ci = two_runs
    doc = score_finished_run(cand, tmp_path)
    assert doc.trials == [] and doc.trials_file is not None and doc.trials_file.rows == 12
    assert doc.inputs.results == {}  # each result's digest is on its row's line in the side file
    rows = list(iter_trials(doc))
    assert rows == score_run(cand, verify=False).trials and len(rows) == 12


def test_compare_gives_the_comparison_and_ci_outputs_of_the_scores_in_memory(two_runs, tmp_path: Path) -> None:  # noqa: ANN001
    base, cand, _printed, _ci = two_runs
    r = run_assay("compare", str(base), str(cand), "--json", "--junit", str(tmp_path / "cmp.xml"),
                  "--summary-md", str(tmp_path / "cmp.md"), env=NO_STEP_SUMMARY)
    assert r.returncode == 0, r.stderr
    cmp = compare_scores(score_run(base), score_run(cand))
    assert json.loads(r.stdout) == json.loads(json.dumps(cmp.dump()))
    write_ci_outputs(score_run(cand), cmp, junit=tmp_path / "mem.xml", summary_md=tmp_path / "mem.md",
                     held=held_out_of(base) | held_out_of(cand), started_at=run_started(cand))
    assert (tmp_path / "cmp.xml").read_bytes() == (tmp_path / "mem.xml").read_bytes()
    assert (tmp_path / "cmp.md").read_bytes() == (tmp_path / "mem.md").read_bytes()


def test_a_runs_figures_alone_are_the_full_scores_figures(two_runs) -> None:  # noqa: ANN001
    _base, cand, _printed, _ci = two_runs
    figures = score_figures(cand).dump()
    full = score_run(cand, keep_trials=False).dump()
    assert len(full["inputs"]["results"]) == 12  # what a score in memory holds: a digest per result
    assert figures["inputs"]["results"] == {} and figures["trials"] == [] and figures.get("trials_file") is None
    for part in ("inputs", "trials", "trials_file", "scored_at"):
        figures.pop(part, None)
        full.pop(part, None)
    assert figures == full and figures["agents"]


def test_compare_holds_nothing_of_the_candidate_while_the_baseline_is_scored(two_runs, tmp_path: Path,  # noqa: ANN001
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """At 10^6 trials a candidate's RunDir kept its manifest and its log's index (140 MB) through the
    baseline's scoring: the candidate is scored, what is asked of its run directory taken, and its
    RunDir let go before the baseline is scored."""
    import gc

    import assay.score.engine as engine
    from assay.cli.main import main
    from assay.store.rundir import RunDir

    base, cand, _printed, _ci = two_runs
    alive: list[list[Path]] = []
    real = engine.score_figures

    def figures(run_dir):  # noqa: ANN001, ANN202
        gc.collect()
        alive.append([o.path for o in gc.get_objects() if isinstance(o, RunDir) and o._manifest_seen is not None])
        return real(run_dir)

    monkeypatch.setattr(engine, "score_figures", figures)
    assert main(["compare", str(base), str(cand), "--json"]) in (0, None)
    assert alive and all(Path(cand).resolve() not in {p.resolve() for p in paths} for paths in alive), alive
