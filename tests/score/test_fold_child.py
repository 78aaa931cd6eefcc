"""A large run's trials folded in a process of its own (score/fold_child.py) give the very score the
scoring process gives folding them itself: the document byte for byte, the side file byte for
byte, the same screen, the same refusal; and a fold that fails fails the score, leaving nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assay.errors import IntegrityError
from assay.records.trial_file import TrialWriter
from assay.score import engine, fold_child, score_files, score_run, write_score
from assay.score.fold_child import FoldChild, fold_in_child
from assay.store import scan_workers
from assay.store.rundir import RunDir
from assay.store.scan import TrialRead
from tests.score.synth import attempt, manifest, trial_id
from tests.score.test_fastpath import build, trials


def scored(path: Path, apart: bool, **kw: Any) -> tuple[str, Any, bytes]:
    """(outcome, the document without its time or the refusal, the side file's bytes)."""
    side = path.parent / f"side-{apart}.jsonl"
    writer = TrialWriter(side)
    try:
        doc = score_run(path, writer=writer, fold_apart=apart, **kw).dump()
    except IntegrityError as e:
        writer.abort()
        return "refused", str(e), b""
    digest = writer.close()
    data = side.read_bytes()
    assert digest == hashlib.sha256(data).hexdigest() and writer.rows == len(data.splitlines())
    doc.pop("scored_at")
    return "scored", json.dumps(doc), data


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(spec=trials(), missing=st.integers(0, 2), verify=st.booleans())
def test_the_same_score_folded_here_or_apart(tmp_path_factory: pytest.TempPathFactory, spec: list[dict[str, Any]],
                                             missing: int, verify: bool) -> None:
    path = build(tmp_path_factory.mktemp("fc") / "run", spec, missing)
    here, apart = scored(path, False, verify=verify), scored(path, True, verify=verify)
    assert here == apart
    assert here[0] == "scored" or verify  # only a check refuses


def log_run(tmp_path: Path, n: int) -> Path:
    """A run of the results log with passes, failures, a retried trial, a suspect pass (a passing
    result whose workspace diff does not read) and a planned trial with no result."""
    planned = [trial_id(f"t{i % 7}", "base", "ab"[i % 2], i // 14 + 1) for i in range(n)] + ["gone.base.a.r1"]
    m = manifest({"code": 2, "ops": 1}, ["a", "b"], planned)
    m = m.model_copy(update={"plan": m.plan.model_copy(update={"results": "log"})})
    rd = RunDir.create(tmp_path / "run", m)
    for i, tid in enumerate(planned[:-1]):
        task, _v, agent, rep = tid.split(".")
        r = attempt(task, ["code", "ops"][i % 2], agent, int(rep[1:]), ["pass", "fail", "timeout"][i % 3],
                    cost=i / 7, tokens=i, retryable=i % 11 == 0)
        if i % 5 == 0 and r.end_state.value == "pass":
            # a workspace diff that does not read: the screen names it (a suspect pass, never a silent one)
            r = r.model_copy(update={"artifacts": {"workspace.diff": rd.put_artifact(f"not a diff {i}".encode())}})
        rd.write_result(r)
        if i % 11 == 0:
            rd.write_result(attempt(task, ["code", "ops"][i % 2], agent, int(rep[1:]), "pass", attempt=2))
    assert (rd.path / "results.jsonl").is_file()
    return rd.path


def test_a_log_run_the_same_apart_with_its_suspects(tmp_path: Path) -> None:
    run = log_run(tmp_path, 300)
    here, apart = scored(run, False), scored(run, True)
    assert here == apart and here[0] == "scored"
    doc = json.loads(apart[1])
    assert doc["suspect_passes"], "the screen ran in the folding process too"
    assert len(apart[2].splitlines()) == 301  # every planned trial has its row, the one missing too
    assert doc["inputs"]["result_files"] == 300 + len(range(0, 300, 11))


def test_a_log_run_with_a_lost_artifact_unchecked_is_the_same_apart(tmp_path: Path) -> None:
    """A result naming an artifact that is gone (scored without the check, which would refuse it):
    its row says so wherever it was folded (a trial is sent in short only when nothing but its one
    line was read: a lost artifact is not that)."""
    run = log_run(tmp_path, 60)
    for art in (run / "artifacts").rglob("*"):
        if art.is_file():
            art.unlink()
    here, apart = scored(run, False, verify=False), scored(run, True, verify=False)
    assert here == apart and here[0] == "scored"
    rows = [json.loads(line)["row"] for line in apart[2].splitlines()]
    naming = {r["trial_id"] for line in (run / "results.jsonl").read_bytes().splitlines()
              if (r := json.loads(line))["artifacts"]}
    assert naming and {r["trial_id"] for r in rows if not r["artifacts_ok"] and r["attempts"]} == naming


def test_a_changed_line_refuses_the_score_apart_and_writes_nothing(tmp_path: Path) -> None:
    run = log_run(tmp_path, 40)
    log = run / "results.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"end_state":"fail"', b'"end_state":"pass"', 1))
    with pytest.raises(IntegrityError, match="was modified after it was written"):
        score_run(run, writer=TrialWriter(tmp_path / "side.jsonl"), fold_apart=True)
    with pytest.raises(IntegrityError):
        write_score(run)
    assert score_files(run) == [] and not list((run / "scores").glob(".tmp-*"))


def test_a_fold_that_fails_fails_the_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child cannot open the run (here: pointed elsewhere): the score fails naming its exit, no
    score version is written and no temporary file is left."""
    child = FoldChild(tmp_path / "no-run", tmp_path / "side.jsonl", set(), {"code": 1.0}, {"task_success": 1.0})
    child.trial("t.base.a.r1", TrialRead("t.base.a.r1"))
    with pytest.raises(RuntimeError, match="exit code 1"):
        child.finish()

    run = log_run(tmp_path, 20)

    class Elsewhere(FoldChild):
        def __init__(self, root: Path, *args: Any) -> None:
            super().__init__(tmp_path / "no-run", *args)

    monkeypatch.setattr(engine, "FoldChild", Elsewhere)
    monkeypatch.setattr(engine, "fold_in_child", lambda planned, wanted, readers=0: True)
    with pytest.raises(RuntimeError, match="folding the trials ended with exit code 1"):
        write_score(run)
    assert score_files(run) == [] and not list((run / "scores").glob(".tmp-*"))


def test_who_folds_apart() -> None:
    assert fold_in_child(10, True) and not fold_in_child(10**6, False)
    assert not fold_in_child(100, None)  # a small run: a process costs more than it saves
    # a large run whose trial folders are read by processes of the scan: those use every core already
    assert not fold_in_child(10**6, None, readers=2)


def test_a_run_whose_folders_are_read_apart_is_folded_by_the_scanning_process(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Who folds is decided from the run as the scan will read it: a run whose trial folders are read
    by the scan's own processes is folded by the scanning process; one whose results are all in the
    log (no folder to read) is folded apart. Sizes lowered so that both runs count as large."""
    decided: list[tuple[int, bool]] = []
    real = engine.fold_in_child

    def spy(planned: int, wanted: bool | None, *, readers: int = 0) -> bool:
        decided.append((readers, real(planned, wanted, readers=readers)))
        return decided[-1][1]

    monkeypatch.setattr(engine, "fold_in_child", spy)
    monkeypatch.setattr(fold_child, "FOLD_CHILD_FROM", 1)
    monkeypatch.setattr(fold_child, "usable_cores", lambda: 2)
    monkeypatch.setattr(scan_workers, "PROCESSES_FROM", 1)
    monkeypatch.setattr(scan_workers, "usable_cores", lambda: 2)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    one = {"state": "pass", "cost": 0.5, "tokens": 3, "tool_calls": 1, "wall": 2.0, "partial": False, "diagnostic": 1.0,
           "predicates": [], "incidents": [], "extra": {}, "artifact": None}
    folders = build(tmp_path / "files", [{"task": f"t{i}", "category": "code", "agent": "a", "rep": 1,
                                          "attempts": [one], "trace": True} for i in range(6)], 0)
    write_score(folders)
    write_score(log_run(tmp_path / "log", 30))
    assert decided == [(2, False), (0, True)]
