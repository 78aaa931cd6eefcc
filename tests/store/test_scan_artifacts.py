"""The scan asks the disk whether an artifact is there once per scan, not once per trial: a run's
repeats name the same content-addressed artifacts (an empty diff, the same output), and on a real
run of 60,000 trials these stats were a tenth of the checking process's time. A missing artifact is
still asked about, and named, for every result that names it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from assay.store import artifacts_seen
from assay.store import scan as scan_mod
from assay.store.rundir import RunDir
from assay.store.scan import RunScan
from tests.score.synth import attempt, write_run

MISSING = "0" * 64


def _run(path: Path, *, shared: int, missing: int, results: str = "files") -> tuple[RunDir, str]:
    rows = [attempt(f"t{i}", "code", "a", 1, "pass") for i in range(shared + missing)]
    rd = write_run(path, {"code": 1}, [], planned_extra=[r.trial_id for r in rows])
    if results == "log":  # the same run with its results in one log (assay run --results log)
        m = rd.manifest()
        rd = RunDir.create(path.with_name(path.name + "-log"),
                           m.model_copy(update={"plan": m.plan.model_copy(update={"results": "log"})}))
    digest = rd.put_artifact(b"the same diff of every repeat\n")
    for k, r in enumerate(rows):
        rd.write_result(r.model_copy(update={"artifacts": {"workspace.diff": digest if k < shared else MISSING}}))
    return rd, digest


@pytest.mark.parametrize("results", ["files", "log"])
def test_a_shared_artifact_is_asked_of_the_disk_once_a_missing_one_for_every_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, results: str) -> None:
    rd, digest = _run(tmp_path / "run", shared=30, missing=2, results=results)
    asked: list[str] = []
    real = os.path.exists

    def counting(p: str | os.PathLike[str]) -> bool:
        asked.append(os.fspath(p))
        return real(p)

    monkeypatch.setattr(scan_mod.os.path, "exists", counting)
    scan = RunScan(rd, verify=True, workers=0)
    ids = list(rd.manifest().plan.trials)
    reads = [r for r in scan.trials(ids)]
    _checked, problems = scan.finish()
    monkeypatch.undo()

    assert all(r is not None and r.attempts for r in reads)
    assert sum(p.endswith(digest) for p in asked) == 1  # thirty results, one stat
    assert [r.artifacts_ok for r in reads] == [True] * 30 + [False] * 2
    # each result naming the missing artifact is named, and asked about on its own
    assert sum(p.endswith(MISSING) for p in asked) >= 2
    named = [p for p in problems if "workspace.diff" in p and "is missing" in p]
    assert len(named) == 2 and {p.split(" of ")[1].split(" attempt")[0] for p in named} == {"t30.base.a.r1",
                                                                                           "t31.base.a.r1"}


def test_an_artifact_missing_for_one_trial_and_stored_later_is_there_for_the_later_one(tmp_path: Path) -> None:
    """Only what was found is remembered: a digest asked before it was stored is asked again."""
    rows = [attempt(f"t{i}", "code", "a", 1, "pass") for i in range(2)]
    rd = write_run(tmp_path / "run", {"code": 1}, [], planned_extra=[r.trial_id for r in rows])
    content = b"stored after the first trial was read\n"
    from assay.spec.digest import sha256_bytes
    digest = sha256_bytes(content)
    for r in rows:
        rd.write_result(r.model_copy(update={"artifacts": {"workspace.diff": digest}}))
    scan = RunScan(rd, verify=True, workers=0)
    ids = list(rd.manifest().plan.trials)
    it = scan.trials(ids)
    first = next(it)
    rd.put_artifact(content)
    second = next(it)
    assert first is not None and second is not None
    assert (first.artifacts_ok, second.artifacts_ok) == (False, True)


def test_what_a_scan_remembers_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [attempt(f"t{i}", "code", "a", 1, "pass") for i in range(9)]
    rd = write_run(tmp_path / "run", {"code": 1}, [], planned_extra=[r.trial_id for r in rows])
    for r in rows:  # nine artifacts, each its own
        rd.write_result(r.model_copy(update={"artifacts": {"workspace.diff": rd.put_artifact(r.trial_id.encode())}}))
    monkeypatch.setattr(artifacts_seen, "REMEMBERED", 4)
    scan = RunScan(rd, verify=True, workers=0)
    held = []
    for read in scan.trials(list(rd.manifest().plan.trials)):
        assert read is not None and read.artifacts_ok
        held.append(len(scan._artifacts.there))
    assert max(held) <= 4 and held[-1] >= 1
