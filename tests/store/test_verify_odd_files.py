"""`assay verify` never follows a link and never crashes on what it finds: a link or special file
anywhere in a trial folder or among the artifacts, a sealed file turned into a link to an
identical copy or into a folder, and a malformed ledger line are each a named problem (exit 3)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from assay.errors import IntegrityError
from assay.score import score_run
from assay.store.integrity import verify_run
from assay.store.rundir import LEDGER, RunDir
from tests.store.test_sealing import TRIAL, assay, finished_run, run_dir  # noqa: F401 - fixtures

TRIAL_DIR = Path("trials") / TRIAL


def _problems(run: Path) -> list[str]:
    report = verify_run(run)
    assert not report.ok
    return report.problems


def test_a_link_added_to_a_trial_folder_is_a_problem(run_dir: Path) -> None:
    (run_dir / TRIAL_DIR / "notes.txt").symlink_to("/etc/hostname")
    assert any("notes.txt" in p and "link" in p for p in _problems(run_dir))
    with pytest.raises(IntegrityError):
        score_run(run_dir)


def test_a_sealed_file_replaced_by_a_link_to_an_identical_copy_is_a_problem(run_dir: Path, tmp_path: Path) -> None:
    trace = run_dir / TRIAL_DIR / "trace.jsonl"
    copy = tmp_path / "elsewhere.jsonl"
    shutil.copy(trace, copy)
    trace.unlink()
    trace.symlink_to(copy)  # same bytes, same digest: only the link gives it away
    assert any("trace.jsonl" in p and "link" in p for p in _problems(run_dir))


def test_a_fifo_in_a_trial_folder_is_a_problem_not_a_hang(run_dir: Path) -> None:
    os.mkfifo(run_dir / TRIAL_DIR / "attempts" / "1" / "pipe")
    assert any("pipe" in p and "not a regular file" in p for p in _problems(run_dir))


def test_a_sealed_file_replaced_by_a_folder_is_a_problem_not_a_crash(run_dir: Path) -> None:
    result = run_dir / TRIAL_DIR / "attempts" / "1" / "result.json"
    result.unlink()
    result.mkdir()
    problems = _problems(run_dir)
    assert any("result.json" in p and "not a regular file" in p for p in problems)
    cli = assay("verify", str(run_dir))
    assert cli.returncode == 3 and "Traceback" not in cli.stderr


def test_a_link_among_the_artifacts_is_a_problem(run_dir: Path) -> None:
    arts = sorted((run_dir / "artifacts" / "sha256").glob("*/*"))
    assert arts, "the run stored no artifact: the test would prove nothing"
    target = arts[0]
    keep = target.with_name(target.name + ".orig")
    target.rename(keep)
    target.symlink_to(keep)
    assert any(target.name[:12] in p and "link" in p for p in _problems(run_dir))


@pytest.mark.parametrize("line", [{"path": 5, "sha256": "ab"}, {"path": "x", "sha256": None}, ["not", "a", "record"]])
def test_a_malformed_ledger_line_is_a_problem_not_a_crash(run_dir: Path, line: object) -> None:
    ledger = run_dir / LEDGER
    lines = ledger.read_text().splitlines()
    lines.insert(1, json.dumps(line))  # not the last line: a torn last line is a killed runner's, fenced
    ledger.write_text("\n".join(lines) + "\n")
    assert any("ledger" in p and "line 2" in p for p in _problems(run_dir))
    cli = assay("verify", str(run_dir))
    assert cli.returncode == 3 and "Traceback" not in cli.stderr


def _nest(top: Path, names: list[str], leaf: str | None = None) -> None:
    cur = os.open(top, os.O_RDONLY)
    for name in names:
        os.mkdir(name, dir_fd=cur)
        nxt = os.open(name, os.O_RDONLY, dir_fd=cur)
        os.close(cur)
        cur = nxt
    if leaf is not None:
        os.close(os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=cur))
    os.close(cur)


def test_deep_nesting_in_a_trial_folder_is_walked_not_a_crash(run_dir: Path) -> None:
    """1,500 nested folders made the recursive walk raise RecursionError (a traceback, not a
    verdict); empty folders hold no evidence, so the run still verifies and scores."""
    from assay.untrusted.tree import remove_untrusted

    _nest(run_dir / TRIAL_DIR, ["a"] * 1500)
    try:
        assert verify_run(run_dir).ok
        score_run(run_dir)
    finally:
        remove_untrusted(run_dir / TRIAL_DIR / "a")  # pytest's own cleanup recurses


def test_a_file_hidden_past_path_max_in_a_trial_folder_is_a_problem(run_dir: Path) -> None:
    from assay.untrusted.tree import remove_untrusted

    _nest(run_dir / TRIAL_DIR, ["d" * 200] * 24, leaf="result.json")  # 4,800 bytes of path
    try:
        assert any("unreadable" in p for p in _problems(run_dir))
        with pytest.raises(IntegrityError):
            score_run(run_dir)
    finally:
        remove_untrusted(run_dir / TRIAL_DIR / ("d" * 200))


@pytest.mark.parametrize("name", ["²", "١", "x"])
def test_an_attempt_folder_named_by_a_digit_python_cannot_count_is_a_problem_not_a_crash(run_dir: Path,
                                                                                         name: str) -> None:
    """``str.isdigit`` holds for a superscript two (which ``int`` refuses) and for an Arabic-Indic one
    (which ``int`` reads as 1): neither names an attempt. A result copied into such a folder is an
    unsealed file, named as in a folder named ``x``, never a traceback and never attempt 1 again."""
    attempts = run_dir / TRIAL_DIR / "attempts"
    (attempts / name).mkdir()
    shutil.copy(attempts / "1" / "result.json", attempts / name / "result.json")
    problems = _problems(run_dir)
    assert any(f"attempts/{name}/result.json" in p for p in problems), problems
    cli = assay("verify", str(run_dir))
    assert cli.returncode == 3 and "Traceback" not in cli.stderr, cli.stderr
    assert f"attempts/{name}/result.json" in cli.stdout + cli.stderr
    assert RunDir.open(run_dir).attempts_of(TRIAL) == [1]  # what `assay show` lists: attempt 1, once
