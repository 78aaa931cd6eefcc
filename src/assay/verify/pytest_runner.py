"""Runs hidden pytest tests inside a predicate's sandbox and streams each report to the harness.

Invoked as ``python -I -B …/pytest_runner.py WORK HIDDEN TESTS`` (by file: the assay package is not
imported, so start-up stays cheap) with a nonce on
stdin. Isolated mode keeps the current directory, PYTHONPATH and user site off ``sys.path``;
pytest is imported *before* the workspace is appended to the end of ``sys.path``, so the agent's
files are importable by the tests but cannot replace pytest, the standard library or the tests.
Plugin autoload is off and the only plugin added is :class:`Stream`; the configuration is an
empty ini of ours, the root dir is the hidden (read-only) directory, so no ``conftest.py``,
``pytest.ini``, ``pyproject.toml``, ``setup.cfg`` or ``tox.ini`` the agent wrote is read.

Verdicts are not read from a file or the exit code: every test report is written, as it
happens, to a private duplicate of stdout as a line tagged with the nonce. The harness decides
(:mod:`assay.verify.pytest_verdict`), including from sentinel tests known to fail.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, TextIO

#: exit code meaning "the verifier's own pytest is missing": an infrastructure error, never a fail
NO_PYTEST = 97
TAG = "@@ASSAY-PYTEST"


class Stream:
    """pytest plugin: one tagged JSON line per report, flushed at once."""

    def __init__(self, out: TextIO, nonce: str):
        self.out, self.nonce = out, nonce

    def emit(self, **record: Any) -> None:
        self.out.write(f"\n{TAG}:{self.nonce}:{json.dumps(record)}\n")
        self.out.flush()

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.emit(id=report.nodeid, when=report.when, outcome=report.outcome, xfail=hasattr(report, "wasxfail"))

    def pytest_collectreport(self, report: Any) -> None:
        if report.outcome != "passed":
            self.emit(collect=report.nodeid, outcome=report.outcome, detail=str(report.longrepr)[-1500:])

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        self.emit(finish=int(exitstatus), collected=int(session.testscollected))


def main(argv: list[str]) -> int:
    work, hidden, tests = argv
    nonce = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w")  # the report channel; fd 1 keeps carrying ordinary output
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_ADDOPTS", None)
    os.environ.pop("PYTEST_PLUGINS", None)
    try:
        import pytest  # imported before the workspace joins sys.path
    except ImportError as e:
        print(f"assay verifier: pytest is not importable by {sys.executable}: {e}", file=sys.stderr)
        return NO_PYTEST
    stream = Stream(out, nonce)
    stream.emit(started=True)
    sys.path.append(work)
    ini = empty_ini()
    os.chdir(hidden)
    try:
        return int(pytest.main([
            os.path.join(hidden, tests), "-q", "-p", "no:cacheprovider", "-p", "no:stepwise", "-c", ini,
            f"--rootdir={hidden}", f"--confcutdir={hidden}", "-o", "addopts=", "-o", "python_files=test_*.py *_test.py",
            "-o", "python_functions=test*", "-o", "python_classes=Test*", "-o", "xfail_strict=false",
        ], plugins=[stream]))
    finally:
        os.unlink(ini)


def empty_ini() -> str:
    """A fresh ``[pytest]`` file of ours (the caller removes it): pytest then reads no configuration
    the agent wrote."""
    fd, ini = tempfile.mkstemp(suffix=".ini")
    os.write(fd, b"[pytest]\n")
    os.close(fd)
    return ini


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
