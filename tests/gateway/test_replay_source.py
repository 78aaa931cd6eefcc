"""A replay of a run directory replays that run's sealed recordings, not files edited since.

``--model replay:RUN_DIR`` read each trial's ``gateway.session.jsonl`` as it found it: a reply
rewritten after the source run was sealed was served to the agent as the model's answer, and the
new run's manifest named the source run by id alone. The source run is now held to its integrity
check before anything is written, and the manifest records its run digest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.run import RunOptions, start_run
from assay.score.versions import write_score
from assay.store.integrity import run_digest
from tests.gateway.test_run_e2e import make_suite


def replay(suite: Path, out: Path, source: Path):
    return start_run(RunOptions(suite=suite, agents=["reference"], out=out, sandbox="host",
                                model=f"replay:{source}", max_retries=0))


def test_a_recording_edited_after_its_run_is_refused_before_the_replay(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "s")
    src = tmp_path / "src"
    first, = start_run(RunOptions(suite=suite, agents=["reference"], out=src, sandbox="host",
                                  model="scripted")).results
    assert first.end_state.value == "pass", first
    rec, = src.glob("trials/*/attempts/*/gateway.session.jsonl")
    text = rec.read_text()
    assert "a + b" in text
    rec.write_text(text.replace("a + b", "a * b"))  # the model "said" another edit
    with pytest.raises(IntegrityError, match="gateway.session.jsonl"):
        replay(suite, tmp_path / "again", src)
    assert not (tmp_path / "again").exists()


def test_an_intact_source_run_is_replayed_and_named_by_its_run_digest(tmp_path: Path) -> None:
    suite = make_suite(tmp_path / "s")
    src = tmp_path / "src"
    start_run(RunOptions(suite=suite, agents=["reference"], out=src, sandbox="host", model="scripted"))
    r, = replay(suite, tmp_path / "again", src).results
    assert r.end_state.value == "pass", r
    settings = json.loads((tmp_path / "again" / "manifest.json").read_text())["gateway"]["settings"]
    assert settings["source_run_digest"] == run_digest(src)


def test_a_resumed_replay_refuses_a_source_run_changed_since_it_began(tmp_path: Path) -> None:
    from assay.run import resume_run

    suite = make_suite(tmp_path / "s")
    src = tmp_path / "src"
    start_run(RunOptions(suite=suite, agents=["reference"], out=src, sandbox="host", model="scripted"))
    out = tmp_path / "again"
    replay(suite, out, src)
    rec, = src.glob("trials/*/attempts/*/gateway.session.jsonl")
    rec.write_text(rec.read_text().replace("a + b", "a * b"))
    before = sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*"))
    with pytest.raises(IntegrityError, match="gateway.session.jsonl"):
        resume_run(out)
    assert sorted((p.relative_to(out), p.stat().st_mtime_ns) for p in out.rglob("*")) == before


def test_a_resumed_replay_goes_on_after_the_source_run_was_scored(tmp_path: Path) -> None:
    """Scoring the source seals its score files in its ledger (its run digest changes); the
    recordings the replay serves did not change, so the resume is not refused."""
    from assay.run import resume_run

    suite = make_suite(tmp_path / "s")
    src = tmp_path / "src"
    start_run(RunOptions(suite=suite, agents=["reference"], out=src, sandbox="host", model="scripted"))
    out = tmp_path / "again"
    replay(suite, out, src)
    began = run_digest(src)
    write_score(src)  # what `assay score` does
    assert run_digest(src) != began  # the ledger grew by the score files
    resume_run(out)  # nothing to do, and not refused


def test_a_resumed_replay_refuses_a_source_run_resumed_since_it_began(tmp_path: Path) -> None:
    """A source run that went on (an attempt started, its files sealed under trials/) has
    recordings the replay did not have when it began: refused, saying so."""
    from assay.run import resume_run
    from assay.store.rundir import RunDir

    suite = make_suite(tmp_path / "s")
    src = tmp_path / "src"
    start_run(RunOptions(suite=suite, agents=["reference"], out=src, sandbox="host", model="scripted"))
    out = tmp_path / "again"
    replay(suite, out, src)
    tid = next(p.name for p in (src / "trials").iterdir())
    RunDir.open(src).mark_started(tid, 2, {"note": "a resume's new attempt"})
    with pytest.raises(IntegrityError, match="went on since"):
        resume_run(out)
