"""The verifier's pytest runners leave nothing in the temporary folder they were given (each run
once left an empty ini behind: about 300 files in /tmp after one whole-suite run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import assay.verify.fail_pass_runner as fail_pass_runner
import assay.verify.pytest_runner as pytest_runner


def _run(argv: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-I", "-B", *argv], input="nonce\n", text=True, capture_output=True,
                          env=env, timeout=120)


def test_pytest_runner_removes_its_ini(tmp_path: Path) -> None:
    work, hidden, tmp = tmp_path / "work", tmp_path / "hidden", tmp_path / "tmp"
    for d in (work, hidden / "tests", tmp):
        d.mkdir(parents=True)
    (hidden / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    p = _run([pytest_runner.__file__, str(work), str(hidden), "tests"], tmp)
    assert "@@ASSAY-PYTEST:nonce:" in p.stdout and '"finish": 0' in p.stdout, p.stderr
    assert sorted(os.listdir(tmp)) == []


@pytest.mark.parametrize("outcome", ["pass", "fail"])
def test_fail_pass_runner_removes_its_ini(tmp_path: Path, outcome: str) -> None:
    work, tmp = tmp_path / "work", tmp_path / "tmp"
    for d in (work, tmp):
        d.mkdir(parents=True)
    (work / "test_a.py").write_text(f"def test_a():\n    assert {outcome == 'pass'}\n")
    p = subprocess.run([sys.executable, "-I", "-B", fail_pass_runner.__file__, str(work), "", ""],
                       input='nonce\n["test_a.py::test_a"]\n', text=True, capture_output=True,
                       env={**os.environ, "TMPDIR": str(tmp)}, timeout=120)
    assert "@@ASSAY-PYTEST:nonce:" in p.stdout, (p.stdout, p.stderr)
    assert sorted(os.listdir(tmp)) == []
