"""`assay show` of a run whose evidence was edited after sealing: the forensic view still shows
what is on disk, but says first that it fails its integrity check, names the files, shows no
summary figures computed from the edited files, and exits 3 (as `verify` does); the JSON says
the same in a field a script can read. An untouched run shows as before, exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_assay


@pytest.fixture
def run_dir(calc_suite: Path, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    proc = run_assay("run", str(calc_suite), "--agent", "oracle,nop", "--sandbox", "host", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def _forge_pass(run: Path, trial: str) -> Path:
    """What a cheat does: the failed result made a pass, the JSON still valid."""
    path = run / "trials" / trial / "attempts" / "1" / "result.json"
    doc = json.loads(path.read_text())
    assert doc["end_state"] == "fail"
    doc["end_state"] = "pass"
    path.write_text(json.dumps(doc))
    return path


def test_an_untouched_run_shows_as_before(run_dir: Path) -> None:
    shown = run_assay("show", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    assert "integrity" not in shown.stdout.lower()
    doc = json.loads(run_assay("show", str(run_dir), "--json").stdout)
    assert doc["integrity"] == {"ok": True, "problems": []}


def test_an_edited_run_is_shown_with_the_failed_check_first_and_no_figures(run_dir: Path) -> None:
    before = run_assay("show", str(run_dir)).stdout
    assert "strict (scored)" in before and "0% (0/1)" in before  # the summary: nop fails
    _forge_pass(run_dir, "calc.base.nop.r1")
    shown = run_assay("show", str(run_dir))
    assert shown.returncode == 3
    out = shown.stdout
    head = out.lower().index("integrity")
    assert head < out.index("calc.base.oracle.r1")  # said before the trials
    assert "calc.base.nop.r1/attempts/1/result.json" in out and "modified after it was written" in out
    assert "strict (scored)" not in out and "(1/1)" not in out  # no figure computed from the forged result
    assert "calc.base.nop.r1" in out  # the forensic view still lists what is on disk


def test_one_edited_trial_is_shown_with_its_problem(run_dir: Path) -> None:
    _forge_pass(run_dir, "calc.base.nop.r1")
    shown = run_assay("show", str(run_dir), "calc.base.nop.r1")
    assert shown.returncode == 3
    assert "result.json" in shown.stdout and "modified after it was written" in shown.stdout
    assert shown.stdout.lower().index("integrity") < shown.stdout.index("predicates")
    # another trial of the same run: its own files are intact, but the run is not, and it says so
    other = run_assay("show", str(run_dir), "calc.base.oracle.r1")
    assert other.returncode == 3 and "calc.base.nop.r1/attempts/1/result.json" in other.stdout


def test_the_json_of_an_edited_run_says_so(run_dir: Path) -> None:
    _forge_pass(run_dir, "calc.base.nop.r1")
    shown = run_assay("show", str(run_dir), "--json")
    assert shown.returncode == 3
    doc = json.loads(shown.stdout)
    assert doc["integrity"]["ok"] is False
    assert any("calc.base.nop.r1/attempts/1/result.json" in p for p in doc["integrity"]["problems"])
    one = json.loads(run_assay("show", str(run_dir), "calc.base.nop.r1", "--json").stdout)
    assert one["integrity"]["ok"] is False
