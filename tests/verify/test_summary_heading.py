"""Terminal-Bench 1's verdict is read after the test script's 'short test summary info' heading,
in the harness's own process. The script's output is the agent's to fill: its program prints
there, its files are cat-ed there. The pattern ``=+\\s*short test summary info\\s*=+`` tried every
``=`` of a run of them against the rest of the run: 40,000 took 15 s and 160,000 four minutes, with
the attempt's verifier past its deadline and nothing to interrupt it."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.verify.predicates.reward import after_summary_heading, pytest_summary

#: a guard against a hang, not a synchronisation: the reading of these outputs ends in milliseconds
HANG_GUARD_S = 60
#: the pattern as it was: the reference the linear reading is held to
REFERENCE = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)


@pytest.mark.parametrize("output", ["=" * 400_000, "=" * 400_000 + " short test summary info",
                                    "=" * 200_000 + " short test summary info " + "=" * 200_000 + "\nPASSED t"])
def test_a_run_of_equals_signs_is_read_in_linear_time(output: str) -> None:
    code = "import sys; from assay.verify.predicates.reward import pytest_summary; print(pytest_summary(sys.stdin.read()))"
    try:
        done = subprocess.run([sys.executable, "-c", code], input=output, capture_output=True, text=True,
                              timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {len(output)} characters of a test script's output did not end within {HANG_GUARD_S} s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == ("{'t': 'passed'}" if output.endswith("PASSED t") else "None")


PIECES = ["=", "==", " ", "\t", "\n", "\u00a0", "short test summary info", "SHORT TEST SUMMARY INFO",
          "ſhort test summary info", "short test summary", "x", "PASSED a", "FAILED b - why"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_the_heading_is_found_where_the_pattern_found_it(pieces: list[str]) -> None:
    text = "".join(pieces)
    parts = REFERENCE.split(text, maxsplit=1)
    assert after_summary_heading(text) == (parts[1] if len(parts) == 2 else None)
