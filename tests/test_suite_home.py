"""The test suite does not depend on the user's home (issue 28): it runs with a HOME of its own,
inherited by every process it starts, so a stale ~/.ray/auth_token cannot break the Ray tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import assay_env


def test_the_suite_has_its_own_home_inherited_by_its_processes() -> None:
    home = Path(os.environ["HOME"])
    assert home.name.startswith("assay-test-home-") and os.environ["ASSAY_TEST_HOME"] == str(home)
    assert not (home / ".ray").exists()
    child = subprocess.run([sys.executable, "-c", "import os, pathlib; print(pathlib.Path.home())"],
                           capture_output=True, text=True, env=assay_env(), timeout=60)
    assert child.stdout.strip() == str(home)

