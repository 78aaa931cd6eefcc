"""Runs hidden pytest tests so that nothing in the workspace can shadow them.

Invoked as ``python -I -m assay.verify.pytest_runner WORK HIDDEN TESTS JUNIT``: isolated mode
keeps the current directory and PYTHONPATH off ``sys.path``; the workspace is appended at the
*end*, so the agent's files are importable by the tests but cannot replace pytest, the standard
library or the tests themselves. Conftest files are only collected from the hidden directory.
"""

from __future__ import annotations

import os
import sys

#: exit code meaning "the verifier's own pytest is missing": an infrastructure error, never a fail
NO_PYTEST = 97


def main(argv: list[str]) -> int:
    work, hidden, tests, junit = argv
    try:
        import pytest  # imported before the workspace joins sys.path
    except ImportError as e:
        print(f"assay verifier: pytest is not importable by {sys.executable}: {e}", file=sys.stderr)
        return NO_PYTEST
    sys.path.append(work)

    ini = os.path.join(os.path.dirname(junit), "pytest-assay.ini")
    with open(ini, "w") as f:
        f.write("[pytest]\n")
    os.chdir(hidden)
    return int(pytest.main([
        os.path.join(hidden, tests), "-q", "-p", "no:cacheprovider", "-c", ini, f"--rootdir={hidden}",
        f"--confcutdir={hidden}", f"--junitxml={junit}", "-o", "junit_family=xunit2",
    ]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
