"""Which recording the replay backend answers from: the same trial's, else the same task, variant
and repetition by another agent, else the task's; folders in trials/ that are no trial id are
passed over."""

from __future__ import annotations

from pathlib import Path

from assay.gateway.backends.replay import find_recording
from assay.gateway.session import RECORDING_NAME


def _recording(run: Path, tid: str, attempt: int = 1) -> Path:
    p = run / "trials" / tid / "attempts" / str(attempt) / RECORDING_NAME
    p.parent.mkdir(parents=True)
    p.write_text("{}\n", encoding="utf-8")
    return p


def test_the_same_trial_then_the_same_cell_by_another_agent_then_the_task(tmp_path: Path) -> None:
    other_rep = _recording(tmp_path, "pkg.task.base.dsh.r2")
    (tmp_path / "trials" / "notes").mkdir()  # no trial id: passed over
    (tmp_path / "trials" / "pkg.task.base.rx").mkdir()
    assert find_recording(tmp_path, "pkg.task.base.pi.r1") == other_rep  # only the task matches
    same_cell = _recording(tmp_path, "pkg.task.base.hermes.r1")
    assert find_recording(tmp_path, "pkg.task.base.pi.r1") == same_cell
    own = _recording(tmp_path, "pkg.task.base.pi.r1")
    assert find_recording(tmp_path, "pkg.task.base.pi.r1") == own


def test_another_variant_or_task_is_not_the_same_cell(tmp_path: Path) -> None:
    _recording(tmp_path, "pkg.other.base.pi.r1")
    assert find_recording(tmp_path, "pkg.task.base.pi.r1") is None
    by_task = _recording(tmp_path, "pkg.task.hard.pi.r1")
    assert find_recording(tmp_path, "pkg.task.base.pi.r1") == by_task


def test_an_attempt_folder_named_by_a_digit_int_cannot_read_is_passed_over(tmp_path: Path) -> None:
    """``str.isdigit`` holds for a superscript two (``int`` refuses it) and for an Arabic-Indic nine
    (``int`` reads 9, the latest attempt by far): neither is an attempt, so the recording comes from
    attempt 1, never from a folder that only looks numbered, and never a traceback."""
    tid = "pkg.task.base.pi.r1"
    first = _recording(tmp_path, tid)
    for name in ("\u00b2", "\u0669"):
        odd = tmp_path / "trials" / tid / "attempts" / name / RECORDING_NAME
        odd.parent.mkdir()
        odd.write_text("{}\n", encoding="utf-8")
    assert find_recording(tmp_path, tid) == first
