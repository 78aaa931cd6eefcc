"""A finished run hands back its results without reading them: the CLI never asks for them (reading
them all took 18 s and 1.3 GB at 2x10^5 trials, at the end of every run); a caller who asks gets
every result, read once, as the run directory holds them."""

from __future__ import annotations

from pathlib import Path

from assay.run import RunOptions, start_run
from assay.store.run_results import ResultsOnDisk
from assay.store.rundir import RunDir
from tests.conftest import write_suite, write_task


class _Counting(RunDir):
    reads = 0

    def results(self):  # noqa: ANN201 - RunDir's
        type(self).reads += 1
        return super().results()


def test_a_finished_run_reads_its_results_only_when_asked(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "README"}]},
               workspace={"README": "-\n"})
    outcome = start_run(RunOptions(suite=s, agents=["nop", "oracle"], repeat=2, out=tmp_path / "run", sandbox="host",
                                   read_results=False))  # as the CLI runs
    assert isinstance(outcome.results, ResultsOnDisk) and "not read yet" in repr(outcome.results)
    on_disk = RunDir(tmp_path / "run").results()
    assert len(outcome.results) == 4 and outcome.results == on_disk and list(outcome.results) == on_disk
    assert outcome.results[1:] == on_disk[1:] and outcome.results[-1] == on_disk[-1]
    assert {r.agent for r in outcome.results} == {"nop", "oracle"}


def test_by_default_a_finished_run_hands_back_its_results_read(tmp_path: Path) -> None:
    import shutil

    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "README"}]},
               workspace={"README": "-\n"})
    outcome = start_run(RunOptions(suite=s, agents=["nop"], repeat=2, out=tmp_path / "run", sandbox="host"))
    shutil.rmtree(tmp_path / "run")  # a caller may remove the run before it looks at the results
    assert [r.repetition for r in outcome.results] == [1, 2] and {r.agent for r in outcome.results} == {"nop"}


def test_results_on_disk_are_read_once(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "README"}]},
               workspace={"README": "-\n"})
    start_run(RunOptions(suite=s, agents=["nop"], repeat=3, out=tmp_path / "run", sandbox="host"))
    results = ResultsOnDisk(_Counting(tmp_path / "run"))
    assert _Counting.reads == 0
    assert len(results) == 3 and [r.repetition for r in results] == [1, 2, 3] and results[0].agent == "nop"
    assert _Counting.reads == 1 and "read" in repr(results)
    assert results != [] and results == RunDir(tmp_path / "run").results()


def test_a_results_bytes_are_what_its_result_is_parsed_from(tmp_path: Path) -> None:
    from assay.records.results import AttemptResult
    from assay.store.fastread import decode_result

    s = write_suite(tmp_path / "s")
    write_task(s, "one", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "README"}]},
               workspace={"README": "-\n"})
    for layout in ("files", "log"):
        start_run(RunOptions(suite=s, agents=["nop"], repeat=2, out=tmp_path / layout, sandbox="host", results=layout))
        rd = RunDir(tmp_path / layout)
        for tid in rd.trial_ids():
            data, where = rd.result_bytes(tid, 1)
            assert AttemptResult.model_validate_json(data) == rd.result(tid, 1)
            fast = decode_result(data, where)
            assert (fast.end_state, fast.retryable, fast.reason, fast.attempt) == (
                rd.result(tid, 1).end_state, rd.result(tid, 1).retryable, rd.result(tid, 1).reason, 1)
            assert ("results.jsonl (byte " in str(where)) == (layout == "log")
            assert rd.result_bytes(tid, 2) is None and rd.result(tid, 2) is None
